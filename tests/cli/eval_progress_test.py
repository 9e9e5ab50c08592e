"""`sixnd eval` shows its progress where stderr is not a terminal (a log file, nohup, a pipe), as
`sixnd train` does: about 20 lines over the batches, the last one at the last batch, each
"eval K/N  loss L"; the result on stdout is unchanged. `--task hellaswag` likewise, each line
"hellaswag K/N  acc A" (it used to show nothing off a terminal: a long task eval under nohup
was silent until its end)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import checklist  # noqa: E402
import sixnd_files  # noqa: E402
from checklist import check  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
BATCHES = 60
SHARED = os.environ.get("SIXND_SHARED", os.path.join(os.environ.get("SIXND_SOURCE", "."), "..", "shared"))


def check_lines(stderr, pattern, total):
    done = [int(m.group(1)) for m in re.finditer(pattern, stderr, re.M)]
    check(10 <= len(done) <= 30, f"{len(done)} progress lines on a non-terminal stderr (about 20 expected)" +
          ("" if done else f": {stderr[-400:]!r}"))
    check(done[-1:] == [total], f"the last progress line is at {total}: {done[-3:]}")
    check(done == sorted(set(done)), f"progress lines in order: {done}")


def check_hellaswag(tmp, model):
    tok, items = os.path.join(tmp, "tok.bin"), os.path.join(tmp, "items.jsonl")
    subprocess.run([SIXND, "tokenizer", "train", "--input", os.path.join(SHARED, "fixtures", "tokenizer", "corpus.en"),
                    "--vocab-size", "300", "--out", tok, "--threads", "1"], check=True, capture_output=True, env=ENV)
    with open(items, "w") as f:
        for i in range(BATCHES):
            f.write(json.dumps(dict(ctx="The cat sat", endings=["on the mat.", "up"], label=i % 2)) + "\n")
    r = subprocess.run([SIXND, "eval", *model, "--task", "hellaswag", "--data", items, "--tokenizer", tok],
                       capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL)
    check(r.returncode == 0, "eval --task hellaswag exits 0" +
          ("" if r.returncode == 0 else f" (got {r.returncode}: {r.stderr[-400:]!r})"))
    if r.returncode == 0:
        check(json.loads(r.stdout)["items"] == BATCHES, f"{r.stdout.strip()}: expected {BATCHES} items")
        check_lines(r.stderr, rf"^hellaswag (\d+)/{BATCHES}  acc \d\.\d{{4}}$", BATCHES)


def main():
    tmp = tempfile.mkdtemp(prefix="sixnd_eval_progress_")
    try:
        shard = os.path.join(tmp, "val.bin")
        sixnd_files.write_shard(shard, [(i * 7919) % 320 for i in range(BATCHES * 2 * 8 + 1)])
        model = ["--init", "random", "--model", "tiny", "--vocab-size", "320", "--device", "cpu", "--dtype", "fp32"]
        r = subprocess.run([SIXND, "eval", *model, "--data", shard, "--batch", "2", "--seq-len", "8"],
                           capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL)
        check(r.returncode == 0, "eval exits 0" + ("" if r.returncode == 0 else f" (got {r.returncode}: {r.stderr[-400:]!r})"))
        if r.returncode == 0:
            result = json.loads(r.stdout)
            check(result["batches"] == BATCHES, f"{result['batches']} batches scored, expected {BATCHES}")
            check_lines(r.stderr, rf"^eval (\d+)/{BATCHES}  loss \d+\.\d{{4}}$", BATCHES)
        check_hellaswag(tmp, model)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checklist.verdict()


if __name__ == "__main__":
    sys.exit(main())
