"""Bad input to `sixnd tokenizer`: each case ends with one error line naming the file or flag and
the fault, the expected exit code, and the paths that must be exactly as they were (device
nodes, symbolic links and their targets, inputs). Device nodes need root (os.mknod); without it
those cases are left out and the closing line says so."""
import json
import os
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import Case, run_cases  # noqa: E402
import bad_input  # noqa: E402

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)

TEXT = ("The river runs past the old mill, and the children walk along it with their dogs. "
        "In spring the water rises over the stones and the miller opens the sluice. ") * 40


def byte_unicode():
    """GPT-2's byte -> printable character table (the vocab.json spelling of each byte)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def raw_nul(tok, path):
    """The raw NUL must not reach the terminal: the error line names the byte instead."""
    r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", "decode", "--tokenizer", tok, "--input", path],
                                 capture_output=True)
    return "a raw NUL byte in the error output" if b"\x00" in r.stderr else None


def killed_encode(tok, d):
    """An encode of endless input, ended by SIGTERM: no temporary file may stay beside --out."""
    out = os.path.join(d, "endless.bin")
    proc = bad_input.subprocess.Popen([bad_input.SIXND, "tokenizer", "encode", "--tokenizer", tok, "--input", "/dev/zero",
                                       "--out", out, "--threads", "1"], stderr=bad_input.subprocess.DEVNULL)
    deadline = time.time() + 30
    while not [n for n in os.listdir(d) if n.startswith("endless.bin.tmp.")] and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    proc.wait()
    left = [n for n in os.listdir(d) if n.startswith("endless.bin")]
    if proc.returncode != -signal.SIGTERM:
        return f"exit {proc.returncode}, expected death by SIGTERM"
    return f"left behind: {left}" if left else None


def main():
    with tempfile.TemporaryDirectory() as d:
        p = lambda *names: os.path.join(d, *names)  # noqa: E731
        with open(p("corpus.txt"), "w") as f:
            f.write(TEXT)
        tok = p("tok.bin")
        r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size",
                                      "300", "--special", "<|endoftext|>", "--out", tok], capture_output=True)
        assert r.returncode == 0, r.stderr
        with open(p("target.txt"), "w") as f:
            f.write("the file a link points at\n")
        os.symlink(p("target.txt"), p("link.bin"))
        os.mkdir(p("adir"))
        with open(p("binary.dat"), "wb") as f:
            f.write(b"\x00\x01\x02 not ids")
        with open(p("ids.json"), "w") as f:
            f.write("[1, 2, 3]")
        # vocab.json without the byte 'a' (a GPT-2 import whose files were edited by hand).
        bu = byte_unicode()
        vocab = {bu[b]: i for i, b in enumerate(b for b in range(256) if b != ord("a"))}
        vocab["ab"] = 255
        vocab["<|endoftext|>"] = 256
        with open(p("vocab.json"), "w") as f:
            json.dump(vocab, f)
        with open(p("merges.txt"), "w") as f:
            f.write("#version: 0.2\n")
        # A pattern whose backtracking explodes on a long run of 'a' that does not end the text.
        with open(p("aaa.txt"), "w") as f:
            f.write("a" * 40 + "!\n")
        slow_tok = p("slow_tok.bin")
        r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size",
                                      "260", "--pattern", "(a|a)+$", "--out", slow_tok], capture_output=True)
        assert r.returncode == 0, r.stderr

        dev = None
        if os.geteuid() == 0:
            dev = p("null")
            os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device like /dev/null

        enc = ["tokenizer", "encode", "--tokenizer", tok, "--input", p("corpus.txt")]
        cases = [
            Case("encode --out onto a symlink", enc + ["--out", p("link.bin")], ["link.bin", "symbolic link"],
                 unchanged=[p("link.bin"), p("target.txt")]),
            Case("encode --out onto a directory", enc + ["--out", p("adir")], ["adir", "directory"], unchanged=[p("adir")]),
            Case("encode --out empty", enc + ["--out", ""], ["empty"]),
            Case("encode --out - still writes stdout", enc + ["--out", "-"], [], exit_code=0),
            Case("encode --threads huge", enc + ["--threads", "100000"], ["--threads"]),
            Case("train --vocab-size negative",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "-5", "--out", p("t2.bin")],
                 ["--vocab-size", "-5"], unchanged=[p("t2.bin")]),
            Case("train --vocab-size beyond int32",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "99999999999", "--out", p("t2.bin")],
                 ["--vocab-size"], unchanged=[p("t2.bin")]),
            Case("train --heldout-fraction NaN",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("t2.bin"),
                  "--heldout-fraction", "nan"], ["--heldout-fraction"], unchanged=[p("t2.bin")]),
            Case("train --out onto a symlink",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("link.bin")],
                 ["link.bin", "symbolic link"], unchanged=[p("link.bin"), p("target.txt")]),
            Case("train: match limit names the file",
                 ["tokenizer", "train", "--input", p("aaa.txt"), "--vocab-size", "260", "--pattern", "(a|a)+$",
                  "--out", p("t3.bin"), "--heldout-fraction", "0"],
                 ["aaa.txt", "match limit"], unchanged=[p("t3.bin")]),
            Case("encode: match limit names the file",
                 ["tokenizer", "encode", "--tokenizer", slow_tok, "--input", p("aaa.txt"), "--out", p("a.bin")],
                 ["aaa.txt", "match limit"], unchanged=[p("a.bin")]),
            Case("decode of a binary non-shard", ["tokenizer", "decode", "--tokenizer", tok, "--input", p("binary.dat")],
                 ["binary.dat", "byte 0x00"], check=lambda: raw_nul(tok, p("binary.dat"))),
            Case("decode --out onto a symlink",
                 ["tokenizer", "decode", "--tokenizer", tok, "--input", p("ids.json"), "--out", p("link.bin")],
                 ["link.bin", "symbolic link"], unchanged=[p("link.bin"), p("target.txt")]),
            Case("decode --input a directory", ["tokenizer", "decode", "--tokenizer", tok, "--input", p("adir")],
                 ["adir", "directory"]),
            Case("import-gpt2: a byte missing from vocab.json",
                 ["tokenizer", "import-gpt2", "--vocab", p("vocab.json"), "--merges", p("merges.txt"), "--out", p("g.bin")],
                 ["vocab.json", "byte 0x61"], unchanged=[p("g.bin")]),
            Case("export-hf --out onto a directory", ["tokenizer", "export-hf", "--tokenizer", tok, "--out", p("adir")],
                 ["adir", "directory"], unchanged=[p("adir")]),
            Case("info of a non-tokenizer", ["tokenizer", "info", "--tokenizer", p("binary.dat")], ["binary.dat"]),
        ]
        if dev:
            cases += [
                Case("encode --out onto a character device", enc + ["--out", dev], ["null", "character device"],
                     unchanged=[dev]),
                Case("decode --out onto a character device",
                     ["tokenizer", "decode", "--tokenizer", tok, "--input", p("ids.json"), "--out", dev],
                     ["null", "character device"], unchanged=[dev]),
                Case("train --hf-out onto a character device",
                     ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("t4.bin"),
                      "--hf-out", dev], ["null", "character device"], unchanged=[dev, p("t4.bin")]),
            ]
        cases.append(Case("SIGTERM mid-encode leaves no temporary file", ["tokenizer", "info", "--tokenizer", tok], [],
                          exit_code=0, check=lambda: killed_encode(tok, d)))
        # Last: against a faulty build these would destroy the fixtures the other cases use.
        cases += [
            Case("encode --out is the input", enc + ["--out", p("corpus.txt")], ["corpus.txt", "--input"],
                 unchanged=[p("corpus.txt")]),
            Case("encode --out is the tokenizer", enc + ["--out", tok], ["tok.bin", "--tokenizer"], unchanged=[tok]),
            Case("decode --out is the tokenizer",
                 ["tokenizer", "decode", "--tokenizer", tok, "--input", p("ids.json"), "--out", tok],
                 ["tok.bin", "--tokenizer"], unchanged=[tok]),
            Case("train --out is its input",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("corpus.txt")],
                 ["corpus.txt", "--input"], unchanged=[p("corpus.txt")]),
        ]
        return run_cases(cases, "tokenizer bad input" + ("" if dev else " (device-node cases need root: left out)"))


if __name__ == "__main__":
    sys.exit(main())
