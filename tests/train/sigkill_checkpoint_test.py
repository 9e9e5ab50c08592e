"""A run killed with SIGKILL — at random moments of a run that spends most of its time writing
checkpoints — always leaves its newest complete checkpoint loadable, and `--resume latest`
continues from it."""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def main():
    failures = []
    rnd = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, np.random.default_rng(0).integers(0, 1000, 50000))
        run = os.path.join(tmp, "run")
        # Each checkpoint of this model writes ~2 MB and re-reads it for checksums, far longer
        # than the one tiny training step between checkpoints: most kills land mid-write.
        cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "1000", "--max-seq-len", "32",
               "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "1", "--seq-len", "8",
               "--steps", "100000", "--checkpoint-every", "1", "--keep-last", "2", "--out", run, "--peak-tflops", "1"]
        ckroot = os.path.join(run, "checkpoints")
        mid_write = 0
        for attempt in range(4):
            p = subprocess.Popen(cmd + ["--resume", "latest"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
            time.sleep(rnd.uniform(0.8, 2.0))
            p.send_signal(signal.SIGKILL)
            p.wait()
            names = os.listdir(ckroot) if os.path.isdir(ckroot) else []
            mid_write += any(n.endswith(".tmp") for n in names)
            complete = sorted(n for n in names if n.startswith("step-") and os.path.exists(os.path.join(ckroot, n, "DONE")))
            if not complete:
                continue
            last = os.path.join(ckroot, complete[-1])
            r = subprocess.run([SIXND, "sample", "--checkpoint", last, "--prompt-ids", "1,2,3", "--max-tokens", "2",
                                "--device", "cpu"], capture_output=True, text=True, env=ENV)
            print(f"kill {attempt + 1}: left {sorted(names)}; {complete[-1]} loads: {r.returncode == 0}")
            if r.returncode != 0:
                failures.append(f"kill {attempt + 1}: {last} does not load: {r.stderr.strip()}")
        step = int(sorted(n for n in os.listdir(ckroot) if n.startswith("step-"))[-1][5:])
        r = subprocess.run(cmd[:cmd.index("--steps") + 1] + [str(step + 1)] + cmd[cmd.index("--steps") + 2:] +
                           ["--resume", "latest"], capture_output=True, text=True, env=ENV)
        print(f"resume from step {step}: exit {r.returncode}")
        if r.returncode != 0:
            failures.append("resume after the kills failed: " + r.stderr.strip()[-500:])
        print(f"{mid_write} of 4 kills landed while a checkpoint was being written")
    return sixnd_files.report(failures, "SIGKILL during checkpoints")


if __name__ == "__main__":
    sys.exit(main())
