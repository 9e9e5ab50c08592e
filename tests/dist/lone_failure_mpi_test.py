"""One rank failing alone under mpirun ends the job with its error, never a hang.

A write that fails on one rank only (here: one rank under a file-size limit, as a quota would
have it) used to leave that rank in MPI_Finalize and the others in their next collective, waiting
for each other with nothing printed. Two ways out are checked:
- a checkpoint's optimizer shard that rank 1 cannot write: the save is agreed stage by stage, so
  every rank stops at once, rank 1 naming its file and rank 0 pointing at rank 1; no checkpoint
  (not even a temporary directory) is left;
- the run log that rank 0 alone writes: a failure no other rank can know of. Rank 0 prints its
  error, waits a bounded time for the others to reach the end of the run, then aborts the job.
Both must end well inside the timeout, with a non-zero exit."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import stand_in  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
MPIRUN = shutil.which("mpirun")
PRLIMIT = shutil.which("prlimit")
# The shared-memory transport sizes its segment with ftruncate, which a file-size limit refuses.
LAUNCH = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp", "-np", "2"]
TIMEOUT = 150


def launch(tmp, limited_rank, limit, extra):
    """mpirun -np 2 sixnd train, with `limited_rank` under RLIMIT_FSIZE `limit` bytes."""
    wrapper = stand_in.write_script(
        os.path.join(tmp, "rank.sh"),
        '#!/bin/sh\nif [ "$OMPI_COMM_WORLD_RANK" = "%d" ]; then exec %s --fsize=%d -- "$@"; fi\nexec "$@"\n'
        % (limited_rank, PRLIMIT, limit))
    cmd = LAUNCH + [wrapper, SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256",
                    "--train-data", os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32",
                    "--batch", "2", "--seq-len", "16", "--zero", "1", "--peak-tflops", "1"] + extra
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=sixnd_files.MPI_ENV, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, [], TIMEOUT
    errors = [x for x in r.stderr.splitlines() if x.startswith("sixnd")]
    return r.returncode, errors, time.time() - t0


def main():
    if not MPIRUN or not PRLIMIT:
        print("SKIP: mpirun (openmpi-bin) or prlimit (util-linux) not found")
        return 77
    failures = []
    tmp = tempfile.mkdtemp(prefix="sixnd_lone_")
    try:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), [(i * 31) % 256 for i in range(20000)])

        out = os.path.join(tmp, "ck")
        rc, errors, secs = launch(tmp, 1, 20000, ["--steps", "20", "--checkpoint-every", "5", "--out", out])
        print(f"checkpoint shard refused on rank 1: exit {rc} after {secs:.1f} s; {errors}")
        left = sorted(os.listdir(os.path.join(out, "checkpoints"))) if os.path.isdir(os.path.join(out, "checkpoints")) else []
        if rc in (None, 0):
            failures.append(f"checkpoint: exit {rc} (None: hung past {TIMEOUT} s)")
        elif not any("optim-rank1.bin" in e and "File too large" in e for e in errors):
            failures.append(f"checkpoint: no error naming optim-rank1.bin: {errors}")
        elif not any("rank 0" in e and "rank 1 failed" in e for e in errors):
            failures.append(f"checkpoint: rank 0 did not point at rank 1: {errors}")
        elif left:
            failures.append(f"checkpoint: left in checkpoints/: {left}")

        log = os.path.join(tmp, "run.jsonl")
        rc, errors, secs = launch(tmp, 0, 30000, ["--steps", "3000", "--checkpoint-every", "0", "--out",
                                                  os.path.join(tmp, "log"), "--log", log])
        print(f"run log refused on rank 0: exit {rc} after {secs:.1f} s; {errors}")
        if rc in (None, 0):
            failures.append(f"run log: exit {rc} (None: hung past {TIMEOUT} s)")
        elif not any(log in e and "File too large" in e for e in errors):
            failures.append(f"run log: no error naming {log}: {errors}")
        elif not any("failed alone" in e and "aborted" in e for e in errors):
            failures.append(f"run log: no line saying the job was aborted: {errors}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sixnd_files.report(failures, "one rank failing alone under mpirun")


if __name__ == "__main__":
    sys.exit(main())
