"""A --train-data glob that reaches a directory its user may not list ('data/*/*.bin' over one
readable and one unreadable folder) is refused, naming that directory and the fault, before
anything is written: glob() skips such a directory, so the run trained on the readable folders'
shards alone and said nothing. Run as a user the permission bits bind: `nobody` when the test
runs as root."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def main():
    failures = []
    tmp = tempfile.mkdtemp(prefix="sixnd_globacc_")
    try:
        os.chmod(tmp, 0o777)
        for sub in ("a", "b"):
            os.makedirs(os.path.join(tmp, "data", sub))
            shard = os.path.join(tmp, "data", sub, "train.bin")
            sixnd_files.write_shard(shard, np.random.default_rng(0).integers(0, 256, 400))
            os.chmod(shard, 0o644)
            os.chmod(os.path.dirname(shard), 0o755)
        os.chmod(os.path.join(tmp, "data"), 0o755)
        hidden = os.path.join(tmp, "data", "b")
        os.chmod(hidden, 0o700)
        if os.geteuid() != 0 and os.access(hidden, os.R_OK):
            print("SKIP: this user reads a directory of mode 700 it does not own")
            return 77
        out = os.path.join(tmp, "run")
        r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--device", "cpu",
                            "--dtype", "fp32", "--batch", "2", "--seq-len", "16", "--steps", "1", "--peak-tflops", "1",
                            "--out", out, "--train-data", os.path.join(tmp, "data", "*", "*.bin")],
                           capture_output=True, text=True, env=ENV, preexec_fn=sixnd_files.as_user())
        errors = [x for x in r.stderr.splitlines() if "error" in x.lower()]
        print(f"exit {r.returncode}, {errors}")
        if r.returncode != 1 or len(errors) != 1 or hidden not in errors[0] or "Permission denied" not in errors[0]:
            failures.append(f"exit {r.returncode}, expected 1 and one error naming {hidden} and the fault: "
                            f"{r.stderr.strip()[-400:]}")
        if os.path.exists(out):
            failures.append(f"{out} was made")
    finally:
        os.chmod(os.path.join(tmp, "data", "b"), 0o755)
        shutil.rmtree(tmp, ignore_errors=True)
    return sixnd_files.report(failures, "a glob over a directory its user cannot list is refused, naming it")


if __name__ == "__main__":
    sys.exit(main())
