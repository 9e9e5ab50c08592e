"""A run killed with SIGKILL — at random moments of a run that spends most of its time writing
checkpoints — always leaves its newest complete checkpoint loadable, and `--resume latest`
continues from it. The test fails unless at least one kill landed mid-write (a temporary
checkpoint directory was left behind), and the resumed run's first step is the one after the
checkpoint's."""
import json
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
        mid_write = mid_delete = 0
        attempts = 0
        # Kill until one kill has landed mid-write (and at least 4 times), at most 12 times.
        for attempt in range(12):
            if attempt >= 4 and mid_write > 0:
                break
            attempts += 1
            p = subprocess.Popen(cmd + ["--resume", "latest"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
            time.sleep(rnd.uniform(0.8, 2.0))
            p.send_signal(signal.SIGKILL)
            p.wait()
            names = os.listdir(ckroot) if os.path.isdir(ckroot) else []
            mid_write += any(n.endswith(".tmp") for n in names)
            mid_delete += any(n.endswith(".deleting") for n in names)
            complete = sorted(n for n in names if n.startswith("step-") and os.path.exists(os.path.join(ckroot, n, "DONE")))
            if not complete:
                continue
            last = os.path.join(ckroot, complete[-1])
            r = subprocess.run([SIXND, "sample", "--checkpoint", last, "--prompt-ids", "1,2,3", "--max-tokens", "2",
                                "--device", "cpu"], capture_output=True, text=True, env=ENV)
            print(f"kill {attempt + 1}: left {sorted(names)}; {complete[-1]} loads: {r.returncode == 0}")
            if r.returncode != 0:
                failures.append(f"kill {attempt + 1}: {last} does not load: {r.stderr.strip()}")
        complete = sorted(n for n in os.listdir(ckroot) if n.startswith("step-") and
                          os.path.exists(os.path.join(ckroot, n, "DONE")))
        step = int(complete[-1][5:])
        log = os.path.join(tmp, "resume.jsonl")
        r = subprocess.run(cmd[:cmd.index("--steps") + 1] + [str(step + 2)] + cmd[cmd.index("--steps") + 2:] +
                           ["--resume", "latest", "--log", log], capture_output=True, text=True, env=ENV)
        print(f"resume from step {step}: exit {r.returncode}")
        if r.returncode != 0:
            failures.append("resume after the kills failed: " + r.stderr.strip()[-500:])
        else:
            records = [json.loads(x) for x in open(log)]
            steps = [x["step"] for x in records if x.get("type") == "step"]
            resumed = records[0].get("resumed_from", "")
            if steps != [step + 1, step + 2] or not resumed.endswith(complete[-1]):
                failures.append(f"the resumed run logged steps {steps} from '{resumed}', expected "
                                f"[{step + 1}, {step + 2}] from {complete[-1]}")
            if json.loads(r.stdout.splitlines()[-1])["steps"] != step + 2:
                failures.append(f"the resumed run ended at {r.stdout.splitlines()[-1]}, expected step {step + 2}")
        print(f"{mid_write} of {attempts} kills landed while a checkpoint was being written, {mid_delete} while one was "
              "being pruned")
        if mid_write == 0:
            failures.append(f"none of {attempts} kills landed mid-write: the test did not test a torn checkpoint")
    return sixnd_files.report(failures, "SIGKILL during checkpoints")


if __name__ == "__main__":
    sys.exit(main())
