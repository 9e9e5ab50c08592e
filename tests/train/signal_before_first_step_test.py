"""A stop signal that arrives while `sixnd train` sets up (here SIGPIPE: stderr is a pipe whose
reader is gone before the run starts, so its first log line raises it) stops the run before its
first step: nothing is trained, no checkpoint is written (a fresh run leaves none; a resumed one
leaves the checkpoint it resumed from as it was and names it), the run log records the stop at
the step it began from, and the run exits 1. Before, the run trained one step and checkpointed it."""
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def tree(root):
    """Every file under root with its bytes."""
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                files[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return files


def run_with_gone_reader(cmd):
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=w, env=ENV, timeout=300).returncode
    finally:
        os.close(w)


def stops(log):
    return [json.loads(line) for line in open(log) if '"event":"stop"' in line.replace(" ", "")]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, [(i * 7) % 256 for i in range(20000)])
        out, ckpts = os.path.join(tmp, "run"), os.path.join(tmp, "run", "checkpoints")

        def cmd(log, steps):
            return [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--device", "cpu",
                    "--train-data", data, "--batch", "2", "--seq-len", "32", "--steps", str(steps), "--resume", "latest",
                    "--out", out, "--log", os.path.join(tmp, log)]

        rc = run_with_gone_reader(cmd("fresh.jsonl", 4))
        left = sorted(os.listdir(ckpts)) if os.path.isdir(ckpts) else []
        st = stops(os.path.join(tmp, "fresh.jsonl"))
        print(f"fresh run: exit {rc}, checkpoints {left}, steps {sixnd_files.steps_logged(os.path.join(tmp, 'fresh.jsonl'))}, stops {st}")
        if rc != 1 or left or sixnd_files.steps_logged(os.path.join(tmp, "fresh.jsonl")) or \
                [(s["reason"], s["signal"], s["step"], s["last_checkpoint"]) for s in st] != [("signal", signal.SIGPIPE, 0, "")]:
            failures.append(f"fresh run stopped during set-up: exit {rc}, checkpoints {left}, stop records {st}")

        subprocess.run(cmd("first.jsonl", 2), check=True, capture_output=True, env=ENV, timeout=300)
        before = tree(out)
        rc = run_with_gone_reader(cmd("resumed.jsonl", 4))
        after = tree(out)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k) and not k.endswith(".lock"))
        st = stops(os.path.join(tmp, "resumed.jsonl"))
        step2 = os.path.join(ckpts, "step-00000002")
        print(f"resumed run: exit {rc}, changed {changed}, stops {st}")
        if rc != 1 or changed or sixnd_files.steps_logged(os.path.join(tmp, "resumed.jsonl")) or \
                [(s["reason"], s["step"], os.path.realpath(s["last_checkpoint"])) for s in st] != [("signal", 2, os.path.realpath(step2))]:
            failures.append(f"resumed run stopped during set-up: exit {rc}, files changed {changed}, stop records {st}")
    return sixnd_files.report(failures, "a stop signal during set-up stops the run before its first step, writing no checkpoint")


if __name__ == "__main__":
    sys.exit(main())
