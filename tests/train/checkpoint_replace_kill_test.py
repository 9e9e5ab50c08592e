"""A save of a step that already has a checkpoint (a run resumed from an older step saves the
steps of the branch it leaves again) replaces it whole: SIGKILL at any rename of the save leaves
that step's checkpoint, the earlier one or the new one, never neither. (It was moved aside and
the new one renamed in after it, and a kill between the two renames lost both: the next save
deleted the hidden copies, and `--resume latest` went on along the branch the user had left.)
Where renameat2 cannot swap (made to fail here), a kill between the two renames leaves the
earlier copy aside, and the next run puts it back before it looks for `latest`."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from rename_signal import STRACE, SKIP_NOTE, each_rename  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def main():
    if STRACE is None:
        print("SKIP:", SKIP_NOTE)
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, np.random.default_rng(0).integers(0, 256, 4000))
        base = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
                "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "16",
                "--peak-tflops", "1", "--checkpoint-every", "2", "--keep-last", "0"]
        pristine, run = os.path.join(tmp, "pristine"), os.path.join(tmp, "run")
        r = subprocess.run(base + ["--steps", "6", "--out", pristine], capture_output=True, text=True, env=ENV)
        if r.returncode != 0:
            raise RuntimeError(f"the first run failed: {r.stderr.strip()[-300:]}")
        step4 = os.path.join(run, "checkpoints", "step-00000004")
        # Resumed from step 2, the run ends at step 4 and saves it over the left branch's.
        cmd = base + ["--steps", "4", "--out", run, "--resume", os.path.join(run, "checkpoints", "step-00000002")]

        def setup():
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(pristine, run)

        def check(n, r):
            if r.returncode != -signal.SIGKILL:
                return f"exit {r.returncode}, expected death by SIGKILL: {r.stderr.strip()[-300:]}"
            left = sorted(os.listdir(os.path.join(run, "checkpoints")))
            if not os.path.exists(os.path.join(step4, "DONE")):
                return f"step-00000004 is gone or incomplete; the checkpoint directory holds {left}"
            if json.load(open(os.path.join(step4, "meta.json")))["step"] != 4:
                return "step-00000004 holds another step"
            return None
        for syscall in ("rename", "renameat2"):
            fault = each_rename(cmd, setup, check, sig="SIGKILL", syscall=syscall)
            print(f"SIGKILL at each {syscall}: {fault or 'ok'}")
            if fault and not fault.startswith("no "):
                failures.append(fault)

        # Where the file system cannot swap two directories in one step, the earlier copy is
        # moved aside before the new one is renamed in: a kill between the two leaves the step's
        # name empty until the next run puts the earlier copy back, before it looks for `latest`
        # (step 6 of the left branch, as the kill came before the branch's save; or step 4).
        def put_back(n, r):
            if r.returncode != -signal.SIGKILL:
                return f"exit {r.returncode}, expected death by SIGKILL: {r.stderr.strip()[-300:]}"
            nxt = subprocess.run(base + ["--steps", "4", "--out", run, "--resume", "latest"], capture_output=True,
                                 text=True, env=ENV)
            left = sorted(os.listdir(os.path.join(run, "checkpoints")))
            if not os.path.exists(os.path.join(step4, "DONE")):
                return f"after the next run, step-00000004 is gone or incomplete; the checkpoint directory holds {left}"
            if "already at step" not in nxt.stderr:
                return f"the next run did not find its latest checkpoint: {nxt.stderr.strip()[-300:]}"
            return None
        fault = each_rename(cmd, setup, put_back, sig="SIGKILL", fallback=True)
        print(f"SIGKILL at each rename, renameat2 failing: {fault or 'ok'}")
        if fault:
            failures.append(fault)
    return sixnd_files.report(failures, "a checkpoint saved again is replaced whole")


if __name__ == "__main__":
    sys.exit(main())
