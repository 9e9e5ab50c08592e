"""Ranks that see different run directories (a node-local --out, a different working directory
under mpirun's --wdir) must be refused before training, with one error line, never hang.

- `--resume latest` where rank 0 finds a checkpoint and rank 1 (its own run directory, locked
  once, no checkpoints) finds none: rank 1 started fresh while rank 0 resumed, and the ranks
  waited for each other in different collectives forever, with nothing printed.
- a fresh run whose --out rank 1 sees as another directory: it trained every step and failed
  only at the first checkpoint, when rank 1 could not write its optimizer shard into rank 0's
  directory."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
TIMEOUT = 60


def job(a, b, flags):
    """mpirun's MPMD form: rank 0 in directory a, rank 1 in b, the same flags."""
    cmd = [sixnd_files.MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", "--wdir", a, SIXND] + flags + \
          [":", "-np", "1", "--wdir", b, SIXND] + flags
    return sixnd_files.mpi_job_errors(cmd, TIMEOUT)


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        os.makedirs(a)
        os.makedirs(b)
        sixnd_files.write_repeating_shard(os.path.join(a, "train.bin"), 200)
        shutil.copy(os.path.join(a, "train.bin"), os.path.join(b, "train.bin"))
        base = ["train", "--init", "random", "--model", "tiny", "--train-data", "train.bin", "--device", "cpu", "--dtype",
                "fp32", "--seq-len", "16", "--steps", "4", "--zero", "2", "--peak-tflops", "1"]
        r = subprocess.run([SIXND] + base + ["--out", "run", "--batch", "4", "--stop-at", "2"], cwd=a, capture_output=True, text=True,
                           env=sixnd_files.MPI_ENV, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        os.makedirs(os.path.join(b, "run"))
        open(os.path.join(b, "run", ".lock"), "w").close()
        for name, flags in (("resume on one rank only", base + ["--out", "run", "--batch", "2", "--resume", "latest"]),
                            ("rank 1 sees another --out directory", base + ["--batch", "2", "--out", "fresh", "--checkpoint-every", "1"])):
            ended = job(a, b, flags)
            if ended is None:
                failures.append(f"{name}: hung past {TIMEOUT} s")
                continue
            rc, errors = ended
            print(f"{name}: exit {rc}: {errors}")
            if rc == 0 or not errors:
                failures.append(f"{name}: exit {rc}, errors {errors}")
            if os.path.isdir(os.path.join(a, "fresh", "checkpoints")) and \
                    any(e.startswith("step-") for e in os.listdir(os.path.join(a, "fresh", "checkpoints"))):
                failures.append(f"{name}: trained and checkpointed before refusing")
            if any("cannot create the output" in e for e in errors):
                failures.append(f"{name}: refused only at the first checkpoint: {errors}")
    return sixnd_files.report(failures, "ranks that see different run directories are refused at the start")


if __name__ == "__main__":
    sys.exit(main())
