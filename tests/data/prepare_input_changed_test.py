"""A source file that changes between `sixnd data prepare`'s first pass and its second is named
as changed, not as broken: a JSON Lines file cut mid-line, or a gzip file cut short, once read
whole, said "broken JSON line (--on-error skip skips such lines)" or "corrupt gzip data", advice
for a broken file that a changed one does not need. The run is stopped deterministically as the
second pass opens the file (strace injects SIGSTOP into that openat), the file is cut, and the
run continues: one error line naming the file, exit 1, no output and no partial directory."""
import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from rename_signal import SKIP_NOTE, STRACE, TRACED_ENV  # noqa: E402
from sixnd_files import report  # noqa: E402

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)
if STRACE is None:
    print("SKIP: " + SKIP_NOTE)
    sys.exit(77)
SIXND = os.environ["SIXND_BIN"]
WORDS = "apple river stone bridge quiet morning garden letter window market the of and to".split()


def traced_child(parent):
    """The process strace (parent) runs."""
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            if int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]) == parent:
                return int(p)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return None


def openat_count(cmd, path):
    with tempfile.NamedTemporaryFile("r") as log:
        subprocess.run([STRACE, "-qq", "-o", log.name, "-P", path, "-e", "trace=openat"] + cmd, capture_output=True,
                       env=TRACED_ENV, check=True)
        return sum(1 for line in log if line.startswith("openat("))


def cut_at_second_pass(cmd, path, out, cut):
    """Runs cmd stopped as it opens path for the last time (the second pass), calls cut(), lets it
    go on; returns its exit code and error lines. A first, untouched run counts the opens (and
    writes out, removed again). strace's log says when the stop has happened: a SIGCONT sent
    before it would be lost."""
    last = openat_count(cmd, path)
    shutil.rmtree(out)
    with tempfile.NamedTemporaryFile("r") as log:
        st = subprocess.Popen([STRACE, "-qq", "-o", log.name, "-P", path, "-e", "trace=openat", "-e",
                               f"inject=openat:signal=SIGSTOP:when={last}"] + cmd,
                              stderr=subprocess.PIPE, text=True, env=TRACED_ENV)
        while st.poll() is None:  # ends at the stop, or (a fault) when the run ends without one
            if "--- stopped by SIGSTOP ---" in open(log.name).read():
                cut()
                os.kill(traced_child(st.pid), signal.SIGCONT)
                break
            time.sleep(0.01)
        err = st.communicate()[1]
    return st.returncode, [x for x in err.splitlines() if x.startswith("sixnd")]


def check(d, tok, name, data, cut, failures):
    src = os.path.join(d, name)
    with open(src, "wb") as f:
        f.write(data)
    out = os.path.join(d, "out_" + name.replace(".", "_"))
    cmd = [SIXND, "data", "prepare", "--source", "s=" + src, "--tokenizer", tok, "--out", out, "--no-langid",
           "--no-quality", "--no-repetition", "--threads", "1"]
    code, lines = cut_at_second_pass(cmd, src, out, lambda: cut(src))
    if code != 1 or len(lines) != 1:
        failures.append(f"{name}: exit {code}, expected 1 with one error line: {lines}")
        return
    if src not in lines[0] or "changed while being prepared" not in lines[0] or "--on-error" in lines[0]:
        failures.append(f"{name}: the error should name the file as changed, without --on-error advice: {lines[0]}")
    left = [n for n in os.listdir(d) if n.startswith("out_")]
    if left:
        failures.append(f"{name}: left {left} behind")


def main():
    failures = []
    rng = random.Random(3)
    lines = "".join(json.dumps({"text": " ".join(rng.choice(WORDS) for _ in range(60))}) + "\n" for _ in range(400))
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "corpus.txt")
        open(corpus, "w").write(lines)
        tok = os.path.join(d, "tok.bin")
        subprocess.run([SIXND, "tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--special", "<|endoftext|>",
                        "--out", tok], capture_output=True, check=True, env=TRACED_ENV)
        check(d, tok, "docs.jsonl", lines.encode(), lambda p: os.truncate(p, os.path.getsize(p) // 2 + 7), failures)
        check(d, tok, "docs.jsonl.gz", gzip.compress(lines.encode(), mtime=0),
              lambda p: os.truncate(p, os.path.getsize(p) // 2), failures)
    return report(failures, "a source changed between the passes of data prepare named as changed")


if __name__ == "__main__":
    sys.exit(main())
