"""Bad input to `sixnd tokenizer`: each case ends with one error line naming the file or flag and
the fault, the expected exit code, and the paths that must be exactly as they were (device
nodes, symbolic links and their targets, inputs). Device nodes need root (os.mknod); without it
those cases are left out and the closing line says so."""
import json
import os
import signal
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import Case, run_cases, snapshot  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt2_reference import bytes_to_unicode  # noqa: E402
import bad_input  # noqa: E402
import rename_signal  # noqa: E402

FIXTURES = os.path.join(os.environ.get("SIXND_SHARED", "../shared"), "fixtures", "tokenizer")

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)

TEXT = ("The river runs past the old mill, and the children walk along it with their dogs. "
        "In spring the water rises over the stones and the miller opens the sluice. ") * 40


def raw_nul(tok, path):
    """The raw NUL must not reach the terminal: the error line names the byte instead."""
    r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", "decode", "--tokenizer", tok, "--input", path],
                                 capture_output=True)
    return "a raw NUL byte in the error output" if b"\x00" in r.stderr else None


def silent(args):
    """A refused decode prints nothing: no text from the ids before the fault."""
    r = bad_input.subprocess.run([bad_input.SIXND] + args, capture_output=True, stdin=bad_input.subprocess.DEVNULL)
    return f"{len(r.stdout)} bytes on stdout" if r.stdout else None


def write_shard(path, ids):
    """An llm.c version-1 shard (uint16 tokens)."""
    header = [20240520, 1, len(ids)] + [0] * 253
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header) + struct.pack(f"<{len(ids)}H", *ids))


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


def feed(fifo, data):
    """Writes data into a FIFO once a reader opens it (a reader gone early reports that itself)."""
    try:
        with open(fifo, "wb") as f:
            f.write(data)
    except BrokenPipeError:
        pass


def streamed_decode(tok, p):
    """decode reads its input once, so ids or a shard through a pipe (/dev/stdin, -) or a named
    FIFO decode as the same file does: no first 4 KiB lost to a look at the shard magic, no
    reopened pipe found empty, no FIFO waited on twice."""
    run = bad_input.subprocess.run
    with open(p("corpus.txt"), "rb") as f:
        text = f.read()
    enc = [bad_input.SIXND, "tokenizer", "encode", "--tokenizer", tok, "--input", p("corpus.txt")]
    ids = run(enc + ["--out", "-"], capture_output=True, check=True).stdout
    run(enc + ["--out", p("streamed.bin")], capture_output=True, check=True)
    with open(p("streamed.bin"), "rb") as f:
        shard = f.read()
    if len(ids) <= 4096:
        return f"the id list is {len(ids)} bytes, too short to cross stdio's first 4 KiB"
    decode = [bad_input.SIXND, "tokenizer", "decode", "--tokenizer", tok, "--input"]
    for what, data, want in (("ids", ids, text), ("a shard", shard, text), ("a short list", b"[97, 98]", b"ab")):
        for source in ("/dev/stdin", "-"):
            r = run(decode + [source], input=data, capture_output=True, timeout=60)
            if r.returncode != 0 or r.stdout != want:
                return f"{what} piped to --input {source}: exit {r.returncode}, {len(r.stdout)} of {len(want)} bytes " \
                       f"{'right' if want.startswith(r.stdout) else 'wrong'}; {r.stderr.decode(errors='replace').strip()}"
        fifo = p("ids.fifo")
        os.mkfifo(fifo)
        writer = threading.Thread(target=feed, args=(fifo, data))
        writer.start()
        try:
            r = run(decode + [fifo], capture_output=True, timeout=20)
        except bad_input.subprocess.TimeoutExpired:
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets a writer still waiting for a reader go
            return f"{what} through a FIFO: timed out"
        finally:
            writer.join()
            os.remove(fifo)
        if r.returncode != 0 or r.stdout != want:
            return f"{what} through a FIFO: exit {r.returncode}, {len(r.stdout)} of {len(want)} bytes"
    return None


def stdin_a_directory(tok, d):
    """encode and decode of a standard input that cannot be read (a directory) name it stdin, as
    their other faults in it do, not "-"."""
    for verb in ("encode", "decode"):
        fd = os.open(d, os.O_RDONLY)
        try:
            r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", verb, "--tokenizer", tok], stdin=fd,
                                         capture_output=True, text=True, errors="replace")
        finally:
            os.close(fd)
        errors = [x for x in r.stderr.splitlines() if "error" in x]
        if r.returncode != 1 or len(errors) != 1 or "error: stdin: read failed" not in errors[0]:
            return f"{verb}: exit {r.returncode}, stderr {r.stderr.strip()[-300:]!r}"
    return None


def export_to_stdout(tok, d):
    """export-hf --out - writes tokenizer.json to stdout, as encode and decode take -, not to a
    file named -."""
    r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", "export-hf", "--tokenizer", tok, "--out", "-"],
                                 capture_output=True, cwd=d)
    if r.returncode != 0:
        return f"exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}"
    if os.path.exists(os.path.join(d, "-")):
        return "wrote a file named -"
    return None if json.loads(r.stdout)["model"]["type"] == "BPE" else "stdout is no tokenizer.json"


def edited_tokenizer(tok, path, edit):
    """A copy of the tokenizer file tok at path, its JSON changed by edit(doc)."""
    with open(tok) as f:
        doc = json.load(f)
    edit(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def with_special_a(doc):
    """The byte "a" again as a special token, as train --special a wrote it before that was refused."""
    doc["specials"].append({"id": len(doc["tokens"]), "token": "a"})
    doc["tokens"].append("a")
    doc["vocab_size"] = len(doc["tokens"])
    del doc["hash"]


def with_special_gthe(doc):
    """A special "\u0120the": tokenizer.json writes the learned " the" so too (the sixnd file keeps both)."""
    bu = bytes_to_unicode()
    doc["specials"].append({"id": len(doc["tokens"]), "token": "\u0120the"})
    doc["tokens"].append("".join(bu[b] for b in "\u0120the".encode()))
    doc["vocab_size"] = len(doc["tokens"])
    del doc["hash"]


def pair_signal_fault(p):
    """train --out/--hf-out over an earlier pair, SIGTERM as each of its renames returns: both
    files are the earlier pair's or both the new pair's, never one of each, and no temporary
    file is left."""
    train = [bad_input.SIXND, "tokenizer", "train", "--input", p("corpus.txt")]
    pair = (p("pair", "t.bin"), p("pair", "t.json"))
    refs = {}
    for vocab in ("280", "300"):
        ref = (p(f"pair{vocab}.bin"), p(f"pair{vocab}.json"))
        bad_input.subprocess.run(train + ["--vocab-size", vocab, "--out", ref[0], "--hf-out", ref[1]], check=True,
                                 capture_output=True)
        refs[vocab] = ref
    earlier, new = (tuple(snapshot(f) for f in refs[v]) for v in ("280", "300"))

    def setup():
        os.makedirs(p("pair"), exist_ok=True)
        for ref, f in zip(refs["280"], pair):
            with open(ref, "rb") as a, open(f, "wb") as b:
                b.write(a.read())

    def check(n, r):
        now = tuple(snapshot(f) for f in pair)
        if r.returncode != -signal.SIGTERM:
            return f"exit {r.returncode}, expected death by SIGTERM"
        if now not in (earlier, new):
            return "a mismatched pair: " + ", ".join(f"{os.path.basename(f)} {'new' if s in new else 'earlier'}"
                                                     for f, s in zip(pair, now))
        left = sorted(set(os.listdir(p("pair"))) - {"t.bin", "t.json"})
        return f"left {left}" if left else None

    return rename_signal.each_rename(train + ["--vocab-size", "300", "--out", pair[0], "--hf-out", pair[1]], setup, check)


def hf_out_cases(p, tok):
    """--out and --hf-out are checked together before either is written, may not share a file, and
    a fault with either replaces neither (and leaves no temporary file)."""
    keep = p("keep.bin")

    def restore():
        with open(tok, "rb") as a, open(keep, "wb") as b:
            b.write(a.read())
        if os.path.exists(p("same.bin")):
            os.remove(p("same.bin"))

    def nothing_left():
        left = [n for n in os.listdir(p()) if ".tmp." in n]
        return f"left behind: {left}" if left else None

    train = ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "280"]
    imp = ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_ab_cd.txt")]
    cases = [
        Case("train --hf-out is --out", train + ["--out", p("same.bin"), "--hf-out", p("same.bin")],
             ["same.bin", "--out"], unchanged=[p("same.bin")]),
        Case("train --hf-out is --out spelt another way", train + ["--out", p("same.bin"), "--hf-out", p(".", "same.bin")],
             ["same.bin", "--out"], unchanged=[p("same.bin")]),
        Case("train --hf-out is an existing --out", train + ["--out", keep, "--hf-out", keep], ["keep.bin", "--out"],
             unchanged=[keep]),
        Case("import-gpt2 --hf-out is --out", imp + ["--out", p("same.bin"), "--hf-out", p("same.bin")],
             ["same.bin", "--out"], unchanged=[p("same.bin")]),
        Case("train --hf-out in a missing directory replaces no --out",
             train + ["--out", keep, "--hf-out", p("nodir", "x.json")], ["nodir", "does not exist"], unchanged=[keep],
             check=nothing_left),
        Case("import-gpt2 --hf-out in a missing directory replaces no --out",
             imp + ["--out", keep, "--hf-out", p("nodir", "x.json")], ["nodir", "does not exist"], unchanged=[keep],
             check=nothing_left),
    ]
    if os.path.isfile("/proc/version"):
        cases.append(Case("train --hf-out where no file can be made replaces no --out",
                          train + ["--out", keep, "--hf-out", "/proc/version"], ["/proc/version", "/proc takes no new files"],
                          unchanged=[keep, "/proc/version"], check=nothing_left))
    for c in cases:
        c.setup = restore
    return cases


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
        with open(p("notes.txt"), "w") as f:
            f.write("my notes, not sixnd's\n")
        with open(p("package.json"), "w") as f:  # a JSON object with a "version", as tokenizer.json has
            f.write('{\n  "name": "mypkg",\n  "version": "1.2.3"\n}\n')
        os.mkdir(p("adir"))
        with open(p("binary.dat"), "wb") as f:
            f.write(b"\x00\x01\x02 not ids")
        with open(p("ids.json"), "w") as f:
            f.write("[1, 2, 3]")
        # vocab.json without the byte 'a' (a GPT-2 import whose files were edited by hand).
        bu = bytes_to_unicode()
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
        # Id lists cut off or malformed: each must be refused, not decoded as far as it goes.
        id_texts = {"cut.json": "[258, 108, 1,", "cut2.json": "[258, 108", "closed_twice.json": "[258, 108]]]",
                    "oov.json": "[1,2,9999]", "lines.json": "[1,\n 2,\n 9999]", "neg.json": "[1, -2]",
                    "frac.json": "[1, 2.5]", "exp.json": "[1, 1e3]", "huge.json": "[1, 99999999999999999999999]",
                    "no_comma.json": "[1 2]", "trailing_comma.json": "[1, 2,]", "nested.json": "[[1]]",
                    "bare_garbage.txt": "1 2 x", "bare_glued.txt": "1 2]", "empty_ids.json": "",
                    "bare_ok.txt": "1 2, 3\n4\n", "empty_array.json": " [ ]\n"}
        for name, text in id_texts.items():
            with open(p(name), "w") as f:
                f.write(text)
        write_shard(p("oov_shard.bin"), [1, 2, 400])
        # Byte-level BPE vocabularies in GPT-2's spelling: every byte, then "ab" and "cd".
        small_vocab = {bu[b]: b for b in range(256)}
        small_vocab.update({"ab": 256, "cd": 257, "<|endoftext|>": 258})
        with open(p("small_vocab.json"), "w") as f:
            json.dump(small_vocab, f)
        # Two merges spelling "abc" (as sixnd's trainer may write) leave "cd" made by none.
        small_vocab2 = {bu[b]: b for b in range(256)}
        small_vocab2.update({"ab": 256, "bc": 257, "abc": 258, "cd": 259, "<|endoftext|>": 260})
        with open(p("small_vocab2.json"), "w") as f:
            json.dump(small_vocab2, f)
        merges_texts = {"merges_twice_abc.txt": "a b\nb c\nab c\na bc\n",
                        "merges_ab_cd.txt": "#version: 0.2\na b\nc d\n", "merges_ab.txt": "#version: 0.2\na b\n",
                        "merges_bc.txt": "a b\nb c\nc d\n", "merges_empty.txt": "",
                        "merges_one_long_line.txt": "#version: 0.2\n" + "x" * 100000 + "\n"}
        for name, text in merges_texts.items():
            with open(p(name), "w") as f:
                f.write(text)
        with open(os.path.join(FIXTURES, "gpt2_merges.txt"), encoding="utf-8") as f:
            gpt2_merges = f.read().splitlines(keepends=True)
        with open(p("gpt2_merges_cut.txt"), "w", encoding="utf-8") as f:
            f.write("".join(gpt2_merges[:20001]))
        gpt2_vocab = os.path.join(FIXTURES, "gpt2_vocab.json")
        # Training text with no pair to merge.
        for name, text in {"empty.txt": "", "empty2.txt": "", "specials_only.txt": "<|endoftext|>" * 3,
                           "ab.txt": "ab", "special_then_text.txt": "<|endoftext|>abcdq",
                           "blank.txt": "  \n\n\t \r\n   \n" * 50, "blank2.txt": "\n" * 20,
                           # no-break, ideographic, line separator and en spaces: Unicode's whitespace
                           "unicode_blank.txt": "\u00a0\u00a0\u3000\u3000 \u2028\u2002\u2002\n" * 50}.items():
            with open(p(name), "w", encoding="utf-8") as f:
                f.write(text)
        # Windows' "Unicode" text, and files an editor started with a UTF-8 byte order mark.
        with open(p("utf16.txt"), "wb") as f:
            f.write("hello world, the cat sat on the mat\n".encode("utf-16") * 30)
        with open(p("utf16_vocab.json"), "wb") as f:
            f.write(json.dumps(small_vocab).encode("utf-16"))
        with open(p("bom_vocab.json"), "wb") as f:
            f.write(b"\xef\xbb\xbf" + json.dumps(small_vocab).encode())
        with open(p("bom_merges.txt"), "wb") as f:
            f.write(b"\xef\xbb\xbf#version: 0.2\na b\nc d\n")
        slow_tok = p("slow_tok.bin")
        r = bad_input.subprocess.run([bad_input.SIXND, "tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size",
                                      "260", "--pattern", "(a|a)+$", "--out", slow_tok], capture_output=True)
        assert r.returncode == 0, r.stderr

        dev = None
        if os.geteuid() == 0:
            dev = p("null")
            os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device like /dev/null

        edited_tokenizer(tok, p("twin.tok"), with_special_a)
        edited_tokenizer(tok, p("gthe.tok"), with_special_gthe)
        edited_tokenizer(tok, p("version_big.tok"), lambda doc: doc.update(version=2 ** 40 + 1))  # an int cut to 1
        edited_tokenizer(tok, p("hash_number.tok"), lambda doc: doc.update(hash=5))
        os.mkfifo(p("text.fifo"))
        not_utf8 = os.fsdecode(b"<|\xff|>")
        gpt2_merges = os.path.join(FIXTURES, "gpt2_merges.txt")

        enc = ["tokenizer", "encode", "--tokenizer", tok, "--input", p("corpus.txt")]
        train = ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "280"]
        imp = ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_ab_cd.txt")]
        cases = [
            Case("encode --out onto a symlink", enc + ["--out", p("link.bin")], ["link.bin", "symbolic link"],
                 unchanged=[p("link.bin"), p("target.txt")]),
            Case("encode --out onto a directory", enc + ["--out", p("adir")], ["adir", "directory"], unchanged=[p("adir")]),
            Case("encode --out empty", enc + ["--out", ""], ["--out", "empty"]),
            # Outputs replace only what sixnd wrote: a user's notes under the output's name stay.
            Case("encode --out onto a file sixnd did not write", enc + ["--out", p("notes.txt")],
                 ["notes.txt", "not a token shard sixnd wrote"], unchanged=[p("notes.txt")]),
            Case("encode --out onto an earlier shard", enc + ["--out", p("earlier.bin")], [], exit_code=0,
                 setup=lambda: bad_input.subprocess.run([bad_input.SIXND] + enc + ["--out", p("earlier.bin")], check=True,
                                                        capture_output=True)),
            Case("train --out onto a file sixnd did not write", train + ["--out", p("notes.txt")],
                 ["notes.txt", "not a tokenizer file sixnd wrote"], unchanged=[p("notes.txt")]),
            Case("import-gpt2 --hf-out onto a file sixnd did not write",
                 imp + ["--out", p("imp_fresh.tok"), "--hf-out", p("notes.txt")],
                 ["notes.txt", "not a tokenizer.json sixnd wrote"], unchanged=[p("notes.txt"), p("imp_fresh.tok")]),
            Case("export-hf --out onto a file sixnd did not write",
                 ["tokenizer", "export-hf", "--tokenizer", tok, "--out", p("notes.txt")],
                 ["notes.txt", "not a tokenizer.json sixnd wrote"], unchanged=[p("notes.txt")]),
            Case("export-hf --out onto a user's JSON with a version",
                 ["tokenizer", "export-hf", "--tokenizer", tok, "--out", p("package.json")],
                 ["package.json", "not a tokenizer.json sixnd wrote"], unchanged=[p("package.json")]),
            Case("train --hf-out onto a user's JSON with a version",
                 train + ["--out", p("pkg_fresh.tok"), "--hf-out", p("package.json")],
                 ["package.json", "not a tokenizer.json sixnd wrote"], unchanged=[p("package.json"), p("pkg_fresh.tok")]),
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
            Case("train --max-token-bytes 1",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("t2.bin"),
                  "--max-token-bytes", "1"], ["--max-token-bytes", "no merge"], unchanged=[p("t2.bin")]),
            Case("train --max-token-bytes negative",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("t2.bin"),
                  "--max-token-bytes", "-3"], ["--max-token-bytes"], unchanged=[p("t2.bin")]),
            # Both used to pass the flag's check: the first failed naming "vocab size", no flag; the
            # second trained and reported 0.0 bytes per token for text of no bytes.
            Case("train --vocab-size with no room for the specials",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "257", "--special", "<|a|>",
                  "--special", "<|b|>", "--out", p("t2.bin")], ["--vocab-size", "257", "256 + 2 = 258"],
                 unchanged=[p("t2.bin")]),
            Case("train --heldout an empty file",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "300", "--out", p("t2.bin"),
                  "--heldout", p("empty.txt")], ["empty.txt", "is empty", "--heldout"], unchanged=[p("t2.bin")]),
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
            Case("decode of a shard with an id beyond the vocabulary",
                 ["tokenizer", "decode", "--tokenizer", tok, "--input", p("oov_shard.bin")],
                 ["oov_shard.bin", "index 2", "400", "outside the vocabulary (size 300)"]),
            Case("decode of empty stdin", ["tokenizer", "decode", "--tokenizer", tok], ["stdin", "no token ids"]),
            Case("encode with the tokenizer and the text both on stdin",
                 ["tokenizer", "encode", "--tokenizer", "/dev/stdin", "--input", "-"],
                 ["/dev/stdin", "standard input", "--input -"]),
            Case("decode with the tokenizer and the ids both on stdin",
                 ["tokenizer", "decode", "--tokenizer", "/dev/stdin"], ["/dev/stdin", "standard input", "--input -"]),
            Case("decode of ids separated by commas and spaces", ["tokenizer", "decode", "--tokenizer", tok, "--input",
                                                                   p("bare_ok.txt")], [], exit_code=0),
            Case("decode of an empty JSON array", ["tokenizer", "decode", "--tokenizer", tok, "--input",
                                                    p("empty_array.json")], [], exit_code=0),
            Case("decode --out onto a symlink",
                 ["tokenizer", "decode", "--tokenizer", tok, "--input", p("ids.json"), "--out", p("link.bin")],
                 ["link.bin", "symbolic link"], unchanged=[p("link.bin"), p("target.txt")]),
            Case("decode --input a directory", ["tokenizer", "decode", "--tokenizer", tok, "--input", p("adir")],
                 ["adir", "directory"]),
            Case("import-gpt2: GPT-2's merges cut short",
                 ["tokenizer", "import-gpt2", "--vocab", gpt2_vocab, "--merges", p("gpt2_merges_cut.txt"), "--out",
                  p("g.bin")], ["gpt2_merges_cut.txt", "20001 merges", "needs at least 50000", "29999 of its tokens",
                                "id 20257", "cut short"], unchanged=[p("g.bin")]),
            Case("import-gpt2: an empty merges file with GPT-2's vocabulary",
                 ["tokenizer", "import-gpt2", "--vocab", gpt2_vocab, "--merges", p("merges_empty.txt"), "--out",
                  p("g.bin")], ["merges_empty.txt", "0 merges", "needs at least 50000"], unchanged=[p("g.bin")]),
            Case("import-gpt2: a vocab token no merge makes",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_ab.txt"), "--out",
                  p("g.bin"), "--hf-out", p("g.json")],
                 ["merges_ab.txt", "1 merge,", "needs at least 2", 'id 257 "cd"'], unchanged=[p("g.bin"), p("g.json")]),
            Case("import-gpt2: as many merges as tokens, yet one token made by none",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab2.json"), "--merges", p("merges_twice_abc.txt"),
                  "--out", p("g.bin")], ["merges_twice_abc.txt", "4 merges", "1 token of", 'id 259 "cd"'],
                 unchanged=[p("g.bin")]),
            Case("import-gpt2 --hf-out onto a directory writes no --out either",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_ab_cd.txt"),
                  "--out", p("g.bin"), "--hf-out", p("adir")], ["adir", "directory"],
                 unchanged=[p("g.bin"), p("adir")]),
            Case("import-gpt2: a merge whose result is not in vocab.json",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_bc.txt"), "--out",
                  p("g.bin")], ["merges_bc.txt:2", '"bc" is not in'], unchanged=[p("g.bin")]),
            Case("import-gpt2: every vocab token made by a merge is accepted",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_ab_cd.txt"),
                  "--out", p("small.bin")], [], exit_code=0),
            Case("train: an empty input",
                 ["tokenizer", "train", "--input", p("empty.txt"), "--vocab-size", "300", "--out", p("e.bin")],
                 ["empty.txt", "holds no text"], unchanged=[p("e.bin")]),
            Case("train: several empty inputs",
                 ["tokenizer", "train", "--input", p("empty.txt"), p("empty2.txt"), "--vocab-size", "300", "--out",
                  p("e.bin"), "--hf-out", p("e.json")], ["empty.txt", "empty2.txt", "the inputs hold no text"],
                 unchanged=[p("e.bin"), p("e.json")]),
            Case("train: an input of special tokens only",
                 ["tokenizer", "train", "--input", p("specials_only.txt"), "--vocab-size", "300", "--special",
                  "<|endoftext|>", "--out", p("e.bin")], ["specials_only.txt", "holds no text"],
                 unchanged=[p("e.bin")]),
            # Its text all fell in the held-out tail: it was called "an empty file?".
            Case("train: an input whose text is all held out says so",
                 ["tokenizer", "train", "--input", p("special_then_text.txt"), "--vocab-size", "300", "--special",
                  "<|endoftext|>", "--heldout-fraction", "0.5", "--out", p("e.bin")],
                 ["special_then_text.txt", "all of its 18 bytes are held out"], unchanged=[p("e.bin")]),
            # Trained on as bytes, a NUL between every two letters: a vocabulary of 4 merges, and exit 0.
            Case("train --input UTF-16 text", train + ["--input", p("utf16.txt"), "--out", p("e.bin")],
                 ["utf16.txt", "UTF-16LE", "iconv"], unchanged=[p("e.bin")]),
            Case("train --heldout UTF-16 text", train + ["--heldout", p("utf16.txt"), "--out", p("e.bin")],
                 ["utf16.txt", "UTF-16LE", "iconv"], unchanged=[p("e.bin")]),
            # Both were "the file must hold one JSON object".
            Case("import-gpt2 --vocab UTF-16",
                 ["tokenizer", "import-gpt2", "--vocab", p("utf16_vocab.json"), "--merges", p("merges_ab_cd.txt"),
                  "--out", p("g.bin")], ["utf16_vocab.json", "UTF-16LE", "iconv"], unchanged=[p("g.bin")]),
            Case("import-gpt2 of files that begin with a UTF-8 byte order mark",
                 ["tokenizer", "import-gpt2", "--vocab", p("bom_vocab.json"), "--merges", p("bom_merges.txt"),
                  "--out", p("bom.bin")], [], exit_code=0),
            Case("train: an input of whitespace only",
                 ["tokenizer", "train", "--input", p("blank.txt"), "--vocab-size", "300", "--out", p("e.bin")],
                 ["blank.txt", "holds only whitespace"], unchanged=[p("e.bin")]),
            Case("train: several inputs of whitespace only",
                 ["tokenizer", "train", "--input", p("blank.txt"), p("blank2.txt"), "--vocab-size", "300", "--out",
                  p("e.bin")], ["blank.txt", "blank2.txt", "the inputs hold only whitespace"], unchanged=[p("e.bin")]),
            Case("train: an input of Unicode whitespace only",
                 ["tokenizer", "train", "--input", p("unicode_blank.txt"), "--vocab-size", "300", "--out", p("e.bin")],
                 ["unicode_blank.txt", "holds only whitespace"], unchanged=[p("e.bin")]),
            Case("train: whitespace beside a little text is a corpus",
                 ["tokenizer", "train", "--input", p("blank.txt"), p("ab.txt"), "--vocab-size", "300", "--out",
                  p("ab2.bin"), "--heldout-fraction", "0"], [], exit_code=0),
            Case("train: text too small for the vocabulary stops early (documented)",
                 ["tokenizer", "train", "--input", p("ab.txt"), "--vocab-size", "300", "--out", p("ab.bin")], [],
                 exit_code=0),
            Case("import-gpt2 --special replaces <|endoftext|>: named as the cause, not the merges",
                 ["tokenizer", "import-gpt2", "--vocab", gpt2_vocab, "--merges", os.path.join(FIXTURES, "gpt2_merges.txt"),
                  "--special", "<|foo|>", "--out", p("g.bin")],
                 ["gpt2_vocab.json", 'id 50256 "<|endoftext|>"', "not named a special token", "replaces"],
                 unchanged=[p("g.bin")]),
            Case("import-gpt2: a 100 kB merges line is quoted cut short",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", p("merges_one_long_line.txt"),
                  "--out", p("g.bin")], ["merges_one_long_line.txt:2", "x" * 60 + '..."'], unchanged=[p("g.bin")]),
            Case("train --special given twice, refused before training",
                 train + ["--special", "<|endoftext|>", "--special", "<|endoftext|>", "--out", p("e.bin")],
                 ["--special", "given twice"], unchanged=[p("e.bin")]),
            Case("train --special empty", train + ["--special", "", "--out", p("e.bin")], ["--special", "empty"],
                 unchanged=[p("e.bin")]),
            Case("import-gpt2 --special given twice",
                 imp + ["--special", "<|a|>", "--special", "<|a|>", "--out", p("g.bin")], ["--special", "given twice"],
                 unchanged=[p("g.bin")]),
            Case("train --pattern a misspelt name", train + ["--pattern", "gpt3", "--out", p("e.bin")],
                 ["--pattern", "'gpt3' is no pattern name"], unchanged=[p("e.bin")]),
            Case("import-gpt2: a byte missing from vocab.json",
                 ["tokenizer", "import-gpt2", "--vocab", p("vocab.json"), "--merges", p("merges.txt"), "--out", p("g.bin")],
                 ["vocab.json", "byte 0x61"], unchanged=[p("g.bin")]),
            Case("export-hf --out onto a directory", ["tokenizer", "export-hf", "--tokenizer", tok, "--out", p("adir")],
                 ["adir", "directory"], unchanged=[p("adir")]),
            Case("info of a non-tokenizer", ["tokenizer", "info", "--tokenizer", p("binary.dat")], ["binary.dat"]),
            Case("info of GPT-2's vocab.json, whose \"format\" is a token id",
                 ["tokenizer", "info", "--tokenizer", gpt2_vocab], ["gpt2_vocab.json", "not a sixnd tokenizer file"]),
            Case("info of a tokenizer file of version 2^40 + 1", ["tokenizer", "info", "--tokenizer", p("version_big.tok")],
                 ["version_big.tok", "version 1099511627777 is not supported"]),
            Case("info of a tokenizer file whose hash is a number", ["tokenizer", "info", "--tokenizer", p("hash_number.tok")],
                 ["hash_number.tok", '"hash"', "wrong type"]),
            Case("decode through pipes and a FIFO reads the input once", ["tokenizer", "info", "--tokenizer", tok], [],
                 exit_code=0, check=lambda: streamed_decode(tok, p)),
            Case("train --out not UTF-8: written, and its summary too",
                 train + ["--out", os.fsdecode(os.fsencode(p("t")) + b"\xff.bin")], [], exit_code=0,
                 check=lambda: None if os.path.exists(os.fsencode(p("t")) + b"\xff.bin") else "no tokenizer file"),
            Case("train --special not UTF-8, refused before training", train + ["--special", not_utf8, "--out", p("e.bin")],
                 ["--special", "not valid UTF-8"], unchanged=[p("e.bin")]),
            Case("import-gpt2 --special not UTF-8",
                 imp + ["--special", "<|endoftext|>", "--special", not_utf8, "--out", p("g.bin")],
                 ["--special", "not valid UTF-8"], unchanged=[p("g.bin")]),
            Case("train --special of one byte, always an ordinary token", train + ["--special", "a", "--out", p("e.bin")],
                 ["--special", '"a" is one byte', "ordinary token"], unchanged=[p("e.bin")]),
            Case("import-gpt2 --special naming an ordinary GPT-2 token, not the merges",
                 ["tokenizer", "import-gpt2", "--vocab", gpt2_vocab, "--merges", gpt2_merges, "--special", "<|endoftext|>",
                  "--special", "the", "--out", p("g.bin")], ["--special", '"the"', "ordinary token id 1169"],
                 unchanged=[p("g.bin")]),
            Case("import-gpt2 --special with the bytes of an ordinary GPT-2 token",
                 ["tokenizer", "import-gpt2", "--vocab", gpt2_vocab, "--merges", gpt2_merges, "--special", "<|endoftext|>",
                  "--special", " the", "--out", p("g.bin")], ["--special", '" the"', "ordinary token id 262"],
                 unchanged=[p("g.bin")]),
            Case("import-gpt2 --special naming a vocab.json token a merge makes",
                 imp + ["--special", "<|endoftext|>", "--special", "ab", "--out", p("g.bin")],
                 ["--special", '"ab"', "ordinary token id 256"], unchanged=[p("g.bin")]),
            Case("info of a tokenizer file whose special is spelt like an ordinary token",
                 ["tokenizer", "info", "--tokenizer", p("twin.tok")], ["twin.tok", "'a' (id 300)", "ordinary token 97"]),
            Case("export-hf of that file writes no tokenizer.json with a key twice",
                 ["tokenizer", "export-hf", "--tokenizer", p("twin.tok"), "--out", p("twin.json")],
                 ["twin.tok", "ordinary token 97"], unchanged=[p("twin.json")]),
            Case("encode --ordinary of that file", ["tokenizer", "encode", "--tokenizer", p("twin.tok"), "--input",
                                                    p("corpus.txt"), "--ordinary"], ["twin.tok", "ordinary token 97"]),
            Case("train: a special written in tokenizer.json as a learned token is",
                 train + ["--special", "\u0120the", "--out", p("e.bin"), "--hf-out", p("e.json")],
                 ["e.json", "tokenizer.json", '"\u0120the"', "how it writes ordinary token"],
                 unchanged=[p("e.bin"), p("e.json")]),
            Case("export-hf of a special written in tokenizer.json as a learned token is names the tokenizer",
                 ["tokenizer", "export-hf", "--tokenizer", p("gthe.tok"), "--out", p("gthe.json")],
                 ["gthe.tok", "tokenizer.json", '"\u0120the"', "how it writes ordinary token"], unchanged=[p("gthe.json")]),
            Case("export-hf --out - of that tokenizer names it too",
                 ["tokenizer", "export-hf", "--tokenizer", p("gthe.tok"), "--out", "-"],
                 ["gthe.tok", "how it writes ordinary token"],
                 check=lambda: silent(["tokenizer", "export-hf", "--tokenizer", p("gthe.tok"), "--out", "-"])),
            Case("import-gpt2 --pattern that does not compile", imp + ["--pattern", "(", "--out", p("g.bin")],
                 ["--pattern", "does not compile"], unchanged=[p("g.bin")]),
            Case("train --pattern that does not compile", train + ["--pattern", "(", "--out", p("e.bin")],
                 ["--pattern", "does not compile"], unchanged=[p("e.bin")]),
            Case("train --input a FIFO, read more than once",
                 ["tokenizer", "train", "--input", p("text.fifo"), "--vocab-size", "300", "--out", p("e.bin")],
                 ["text.fifo", "a FIFO", "--input must be a regular file"], unchanged=[p("e.bin"), p("text.fifo")],
                 timeout=20),
            Case("train --input -", ["tokenizer", "train", "--input", "-", "--vocab-size", "300", "--out", p("e.bin")],
                 ["--input", "standard input"], unchanged=[p("e.bin")]),
            Case("train --vocab-size beyond int64, quoted as typed",
                 ["tokenizer", "train", "--input", p("corpus.txt"), "--vocab-size", "99999999999999999999", "--out",
                  p("e.bin")], ["--vocab-size", "not 99999999999999999999"], unchanged=[p("e.bin")]),
            Case("train --out empty", train + ["--out", ""], ["--out", "empty"]),
            Case("import-gpt2 --out empty", imp + ["--out", ""], ["--out", "empty"]),
            Case("decode --out empty", ["tokenizer", "decode", "--tokenizer", tok, "--input", p("ids.json"), "--out", ""],
                 ["--out", "empty"]),
            Case("export-hf --out empty", ["tokenizer", "export-hf", "--tokenizer", tok, "--out", ""], ["--out", "empty"]),
            # An empty path (a script's unset variable) is named as the flag, not opened as "" (an error
            # naming nothing) nor taken for the flag left out (--hf-out, --heldout: no file, no word).
            Case("encode --input empty", ["tokenizer", "encode", "--tokenizer", tok, "--input", ""], ["--input", "empty"]),
            Case("decode --input empty", ["tokenizer", "decode", "--tokenizer", tok, "--input", ""], ["--input", "empty"],
                 check=lambda: silent(["tokenizer", "decode", "--tokenizer", tok, "--input", ""])),
            Case("info --tokenizer empty", ["tokenizer", "info", "--tokenizer", ""], ["--tokenizer", "empty"]),
            Case("export-hf --tokenizer empty", ["tokenizer", "export-hf", "--tokenizer", "", "--out", p("e.json")],
                 ["--tokenizer", "empty"], unchanged=[p("e.json")]),
            Case("import-gpt2 --vocab empty",
                 ["tokenizer", "import-gpt2", "--vocab", "", "--merges", p("merges_ab_cd.txt"), "--out", p("g.bin")],
                 ["--vocab", "empty"], unchanged=[p("g.bin")]),
            Case("import-gpt2 --merges empty",
                 ["tokenizer", "import-gpt2", "--vocab", p("small_vocab.json"), "--merges", "", "--out", p("g.bin")],
                 ["--merges", "empty"], unchanged=[p("g.bin")]),
            Case("train --input empty", ["tokenizer", "train", "--input", p("corpus.txt"), "", "--vocab-size", "280",
                                         "--out", p("e.bin")], ["--input", "empty"], unchanged=[p("e.bin")]),
            Case("train --hf-out empty", train + ["--out", p("e.bin"), "--hf-out", ""], ["--hf-out", "empty"],
                 unchanged=[p("e.bin")]),
            Case("train --heldout empty", train + ["--out", p("e.bin"), "--heldout", ""], ["--heldout", "empty"],
                 unchanged=[p("e.bin")]),
            Case("train --out - is no file named -", train + ["--out", "-"], ["--out", "standard output"],
                 unchanged=[os.path.abspath("-")]),
            Case("export-hf --out - writes stdout", ["tokenizer", "info", "--tokenizer", tok], [], exit_code=0,
                 check=lambda: export_to_stdout(tok, d)),
            Case("encode and decode of an unreadable stdin name stdin", ["tokenizer", "info", "--tokenizer", tok], [],
                 exit_code=0, check=lambda: stdin_a_directory(tok, d)),
        ]
        decode_faults = [
            ("cut.json", ["cut.json:1:14", "cut off after 3 ids", "closing ']'"]),
            ("cut2.json", ["cut2.json:1:10", "cut off after 2 ids"]),
            ("closed_twice.json", ["closed_twice.json:1:11", "']' follows"]),
            ("oov.json", ["oov.json:1:6", "9999", "id 3 of the list", "outside the vocabulary (size 300)"]),
            ("lines.json", ["lines.json:3:2", "9999"]),
            ("neg.json", ["neg.json:1:5", "-2", "negative"]),
            ("frac.json", ["frac.json:1:5", "2.5", "not written as a whole number"]),
            ("exp.json", ["exp.json:1:5", "1e3", "not written as a whole number"]),
            ("huge.json", ["huge.json:1:5", "99999999999999999999999", "outside the vocabulary"]),
            ("no_comma.json", ["no_comma.json:1:4", "expected ',' or ']'", "'2'"]),
            ("trailing_comma.json", ["trailing_comma.json:1:7", "expected a token id", "']'"]),
            ("nested.json", ["nested.json:1:2", "expected a token id", "'['"]),
            ("bare_garbage.txt", ["bare_garbage.txt:1:5", "'x'"]),
            ("bare_glued.txt", ["bare_glued.txt:1:4", "']'"]),
            ("empty_ids.json", ["empty_ids.json", "no token ids"]),
        ]
        for name, words in decode_faults:
            args = ["tokenizer", "decode", "--tokenizer", tok, "--input", p(name)]
            cases.append(Case(f"decode of {name}: {id_texts[name]!r}", args, words, check=lambda a=args: silent(a)))
            cases.append(Case(f"decode of {name} with --out", args + ["--out", p("decoded.txt")], words[:1],
                              unchanged=[p("decoded.txt")]))
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
        cases += hf_out_cases(p, tok)
        if rename_signal.STRACE:
            cases.append(Case("SIGTERM between the renames of --out and --hf-out", ["tokenizer", "info", "--tokenizer", tok],
                              [], exit_code=0, check=lambda: pair_signal_fault(p)))
        else:
            print("skip:", rename_signal.SKIP_NOTE)
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
