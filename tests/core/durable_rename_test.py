"""A rename that puts an output in place is on disk only once its directory is synced: after
every rename(2)/renameat2(2) a sixnd command makes to publish a file (core/atomic_file.h) or a
directory (core/dir_swap.h), the directory that holds the new name must be fsync'ed before the
command ends. Watched with strace -y, which names the directory behind each fsync's descriptor.
Without strace, or where it cannot trace, the test skips saying so."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import rename_signal  # noqa: E402
import tiny_text  # noqa: E402

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)
if rename_signal.STRACE is None:
    print("skip: " + rename_signal.SKIP_NOTE)
    sys.exit(77)

RENAME = re.compile(r'^(?:\d+ +)?(rename|renameat|renameat2)\((?:AT_FDCWD<[^>]*>, )?"([^"]+)", (?:AT_FDCWD<[^>]*>, )?"([^"]+)".*\)\s+= 0')
FSYNC = re.compile(r'^(?:\d+ +)?fsync\(\d+<([^>]+)>\)\s+= 0')


def unsynced_renames(cmd, cwd):
    """How many renames succeeded, and the renamed-to paths whose directory no fsync followed."""
    with tempfile.NamedTemporaryFile("r") as log:
        r = subprocess.run([rename_signal.STRACE, "-f", "-qq", "-y", "-e", "trace=rename,renameat,renameat2,fsync", "-o", log.name,
                            *cmd], capture_output=True, text=True, cwd=cwd, env=rename_signal.TRACED_ENV,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-600:]}")
        renames, waiting = 0, []  # directories of renames not yet followed by their directory's fsync
        for line in log:
            m = RENAME.match(line)
            if m:
                renames += 1
                waiting.append(os.path.dirname(os.path.join(cwd, m.group(3))))
                continue
            m = FSYNC.match(line)
            if m:
                waiting = [d for d in waiting if os.path.realpath(d) != os.path.realpath(m.group(1))]
        return renames, waiting


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        sub = os.path.join(tmp, "sub")
        os.makedirs(sub)
        cases = [
            ("encode --out (a file, by a relative path)",
             [tiny_text.SIXND, "tokenizer", "encode", "--tokenizer", p["tokenizer"], "--input", p["val_txt"],
              "--out", "sub/val.bin", "--threads", "1"]),
        ]
        eot_tok = os.path.join(tmp, "eot.tok")
        tiny_text.sixnd("tokenizer", "train", "--input", p["train_txt"], "--vocab-size", "320", "--special", "<|endoftext|>",
                        "--out", eot_tok, "--threads", "1")
        for overwrite in ([], ["--overwrite"]):
            cases.append((f"data prepare --out (a directory{', replacing the earlier one' if overwrite else ''})",
                          [tiny_text.SIXND, "data", "prepare", "--source", "web=" + p["train_txt"], "--tokenizer",
                           eot_tok, "--out", os.path.join(tmp, "prepared"), "--threads", "1", "--no-langid",
                           "--no-quality", "--no-repetition", "--val-fraction", "0", *overwrite]))
        train = [tiny_text.SIXND, "train", *tiny_text.train_flags(p, steps=4), "--out", os.path.join(tmp, "run"),
                 "--checkpoint-every", "2", "--keep-last", "0"]
        cases.append(("train's checkpoints (new, and one saved again by a resumed run)", train))
        cases.append(("train --resume saving its step again", train + ["--resume", os.path.join(tmp, "run", "checkpoints", "step-00000002")]))
        for name, cmd in cases:
            renames, left = unsynced_renames(cmd, tmp)
            if renames == 0:
                left = ["(no rename seen: the trace missed them)"]
            print(f"{'ok  ' if not left else 'FAIL'} {name}: {renames} renames" +
                  (f"; no fsync of {left} after its rename" if left else ""))
            if left:
                failures.append(name)
    if failures:
        print(f"FAILED: {len(failures)} command(s) left a rename unsynced: {failures}")
        return 1
    print(f"PASSED: every rename's directory synced ({len(cases)} commands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
