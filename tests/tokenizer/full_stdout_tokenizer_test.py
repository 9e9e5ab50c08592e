"""`sixnd tokenizer` verbs that write to stdout, with stdout on a full disk (/dev/full): each
fails with exit 1 and one error line naming stdout and the reason, as README promises. decode
and export-hf write their output in one fwrite, which fails outright; the reason was lost when
only the later (empty) flush was checked."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import SIXND, Case, run_cases  # noqa: E402

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)
if not os.path.exists("/dev/full"):
    print("skip: no /dev/full")
    sys.exit(77)

TEXT = "The river runs past the old mill, and the children walk along it with their dogs.\n" * 200  # past stdio's 4 KiB buffer


def full_stdout(args):
    def check():
        with open("/dev/full", "w") as full:
            r = subprocess.run([SIXND] + args, stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                               errors="replace")
        said = [x for x in r.stderr.splitlines() if "error" in x]
        ok = r.returncode == 1 and len(said) == 1 and "stdout: write failed: No space left on device" in said[0]
        return None if ok else f"exit {r.returncode}, stderr {r.stderr[-300:]!r}"
    return check


def main():
    with tempfile.TemporaryDirectory() as d:
        p = lambda *names: os.path.join(d, *names)  # noqa: E731
        with open(p("corpus.txt"), "w") as f:
            f.write(TEXT)
        tok = p("tok.bin")
        subprocess.run([SIXND, "tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", tok],
                       check=True, capture_output=True)
        ids = p("ids.json")
        with open(ids, "wb") as f:
            subprocess.run([SIXND, "tokenizer", "encode", "--tokenizer", tok, "--input", p("corpus.txt")], check=True,
                           stdout=f, stderr=subprocess.DEVNULL)
        verbs = {
            "encode --out -": ["tokenizer", "encode", "--tokenizer", tok, "--input", p("corpus.txt"), "--out", "-"],
            "decode": ["tokenizer", "decode", "--tokenizer", tok, "--input", ids],
            "decode --text": ["tokenizer", "decode", "--tokenizer", tok, "--input", ids, "--text"],
            "export-hf --out -": ["tokenizer", "export-hf", "--tokenizer", tok, "--out", "-"],
            "info": ["tokenizer", "info", "--tokenizer", tok],
        }
        cases = [Case(f"{name} with stdout on a full disk", ["tokenizer", "info", "--tokenizer", tok], [], exit_code=0,
                      check=full_stdout(args)) for name, args in verbs.items()]
        return run_cases(cases, "sixnd tokenizer with stdout on a full disk")


if __name__ == "__main__":
    sys.exit(main())
