"""A run whose checkpoint directory takes no new files (the user made OUT/checkpoints read-only)
is refused before its first step, naming the directory and the fault, and leaves it as it was:
found at the first save instead, it cost every step trained up to then (with --checkpoint-every
0, the whole run). Run as a user the permission bits bind: `nobody` when the test runs as root."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from bad_input import snapshot  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def give_away(path):
    """Makes path (recursively) the test user's, so that only the bits set later keep them out."""
    if os.geteuid() != 0:
        return
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, sixnd_files.NOBODY, sixnd_files.NOBODY)


def main():
    failures = []
    tmp = tempfile.mkdtemp(prefix="sixnd_ckro_")
    try:
        os.chmod(tmp, 0o755)
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, np.random.default_rng(0).integers(0, 256, 4000))
        os.chmod(data, 0o644)
        base = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
                "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "16",
                "--peak-tflops", "1", "--steps", "4"]
        run, empty = os.path.join(tmp, "run"), os.path.join(tmp, "empty")
        os.makedirs(run)
        os.makedirs(os.path.join(empty, "checkpoints"))
        give_away(run)
        give_away(empty)
        r = subprocess.run(base + ["--stop-at", "2", "--out", run, "--log", os.path.join(run, "run.jsonl")],
                           capture_output=True, text=True, env=ENV, preexec_fn=sixnd_files.as_user())
        if r.returncode != 0:
            print(f"SKIP: the first run fails as this user: {r.stderr.strip()[-300:]}")
            return 77
        cases = [("--resume latest", run, ["--checkpoint-every", "2", "--resume", "latest"]),
                 ("a fresh run with --overwrite", run, ["--overwrite"]),
                 ("a fresh run saving only at its end", empty, ["--checkpoint-every", "0"])]
        for _, out, _ in cases:
            os.chmod(os.path.join(out, "checkpoints"), 0o555)
        try:
            for name, out, extra in cases:
                ckroot, log = os.path.join(out, "checkpoints"), os.path.join(out, "run.jsonl")
                before, logged = snapshot(ckroot), sixnd_files.steps_logged(log)
                r = subprocess.run(base + extra + ["--out", out, "--log", log], capture_output=True, text=True, env=ENV,
                                   preexec_fn=sixnd_files.as_user())
                errors = [x for x in r.stderr.splitlines() if "error" in x.lower()]
                trained = sixnd_files.steps_logged(log)[len(logged):]
                print(f"{name}: exit {r.returncode}, steps trained {trained}, {errors}")
                if r.returncode != 1 or len(errors) != 1 or ckroot not in errors[0] or "Permission denied" not in errors[0]:
                    failures.append(f"{name}: exit {r.returncode}, expected 1 and one error naming {ckroot} and the fault: "
                                    f"{r.stderr.strip()[-400:]}")
                if trained:
                    failures.append(f"{name}: trained steps {trained} it could never save")
                if snapshot(ckroot) != before:
                    failures.append(f"{name}: {ckroot} changed")
        finally:
            for _, out, _ in cases:
                os.chmod(os.path.join(out, "checkpoints"), 0o755)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sixnd_files.report(failures, "a read-only checkpoint directory is refused before the first step")


if __name__ == "__main__":
    sys.exit(main())
