"""`sixnd train --check` judges the paths the run writes as the run does: for each --out and --log
below, --check refuses exactly when the run refuses at its start, with the run's own error line,
and passes where the run trains. --check writes nothing: no --out is made, no file is touched."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def errors(stderr):
    return [x for x in stderr.splitlines() if "error" in x]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, list(range(256)) * 4)
        os.mkdir(os.path.join(tmp, "adir"))
        with open(os.path.join(tmp, "afile"), "w") as f:
            f.write("not a directory\n")
        with open(os.path.join(tmp, "notes.jsonl"), "w") as f:
            f.write('{"not": "a run log"}\n')
        os.makedirs(os.path.join(tmp, "hasfile"))
        with open(os.path.join(tmp, "hasfile", "checkpoints"), "w") as f:
            f.write("x")
        cases = [  # (name, --out, --log or None, whether the run starts)
            ("--out is a file", "afile", None, False),
            ("--out/checkpoints is a file", "hasfile", None, False),
            ("--log is a directory", "r1", "adir", False),
            ("--log in a missing directory", "r2", "missing/log.jsonl", False),
            ("--log under a file", "r3", "afile/log.jsonl", False),
            ("--log in a subdirectory of a new --out", "r4", "r4/sub/log.jsonl", False),
            ("--log is no run log", "r5", "notes.jsonl", False),
            ("--log inside a new --out", "r6", "r6/log.jsonl", True),
            ("--log a new file beside --out", "r7", "r7.jsonl", True),
            ("--log /dev/null", "r8", "/dev/null", True),
            ("--log is the log of a run into another --out", "r9", "r7.jsonl", False),
        ]
        before = {n: open(os.path.join(tmp, n), "rb").read() for n in ("afile", "notes.jsonl")}
        for name, out, log, starts in cases:
            cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--train-data", data,
                   "--seq-len", "16", "--batch", "2", "--steps", "1", "--device", "cpu", "--out", out]
            if log:
                cmd += ["--log", log]
            existed = os.path.exists(os.path.join(tmp, out))
            chk = subprocess.run(cmd + ["--check"], cwd=tmp, capture_output=True, text=True, env=ENV, timeout=120)
            if not existed and os.path.exists(os.path.join(tmp, out)):
                failures.append(f"{name}: --check made {out}")
            run = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=ENV, timeout=300)
            print(f"{name}: --check exit {chk.returncode} {errors(chk.stderr)}; run exit {run.returncode} {errors(run.stderr)}")
            if (run.returncode == 0) != starts:
                failures.append(f"{name}: the run {'failed' if starts else 'started'} ({run.stderr.strip()!r}); the case is wrong")
            elif starts and chk.returncode != 0:
                failures.append(f"{name}: --check refused what the run trains with: {chk.stderr.strip()!r}")
            elif not starts and (chk.returncode == 0 or errors(chk.stderr) != errors(run.stderr)):
                failures.append(f"{name}: --check said {chk.returncode} {errors(chk.stderr)}, the run {errors(run.stderr)}")
        for n, b in before.items():
            if open(os.path.join(tmp, n), "rb").read() != b:
                failures.append(f"{n} was changed")
    return sixnd_files.report(failures, "train --check refuses the --out and --log paths the run refuses, with its words")


if __name__ == "__main__":
    sys.exit(main())
