"""Differential fuzz of `sixnd tokenizer encode/decode` against an independent GPT-2 encoder
(gpt2_reference.py): random text from many scripts, combining marks, emoji sequences, mixed
whitespace, contractions, digits, long runs, special and partial special tokens, invalid UTF-8;
one input past the CLI's 4 MiB chunk; and `tokenizer train` giving the same tokenizer with 1 and
2 threads, which round-trips random bytes. Fixed seed, bounded time (SIXND_FUZZ_SEED picks
others, SIXND_FUZZ_SECONDS the budget). Skips (77) without python3-regex or the fixtures."""
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import regex  # noqa: F401
except ImportError:
    print("SKIP: python3-regex is not installed (GPT-2's pattern needs \\p{L}/\\p{N})")
    sys.exit(77)
from gpt2_reference import Gpt2Reference  # noqa: E402

SHARED = os.environ.get("SIXND_SHARED", os.path.join(HERE, "..", "..", "..", "shared"))
FIX = os.path.join(SHARED, "fixtures", "tokenizer")
BIN = os.environ.get("SIXND_BIN", os.path.join(HERE, "..", "..", "build", "sixnd"))
if not os.path.exists(os.path.join(FIX, "gpt2_vocab.json")) or not os.path.exists(BIN):
    print("SKIP: GPT-2 fixtures or the sixnd binary not found")
    sys.exit(77)

SEED = int(os.environ.get("SIXND_FUZZ_SEED", "1"))
BUDGET = float(os.environ.get("SIXND_FUZZ_SECONDS", "25"))


def chars(a, b):
    return [chr(c) for c in range(a, b + 1)]


LETTERS = chars(0x61, 0x7A) + chars(0x41, 0x5A) + chars(0xC0, 0xFF) + chars(0x100, 0x17F)
COMBINING = chars(0x300, 0x36F) + ["\u0903", "\u093e", "\u0e31", "\u20dd"]
SCRIPTS = [chars(0x391, 0x3C9), chars(0x410, 0x44F), chars(0x5D0, 0x5EA), chars(0x627, 0x64A),
           chars(0x905, 0x939), chars(0xE01, 0xE2E), chars(0x4E00, 0x4E80), chars(0x3041, 0x3096),
           chars(0xAC00, 0xAC80), chars(0x1200, 0x1248), ["ß", "ǅ", "ʰ", "ª", "µ", "ﬁ", "İ", "ı"]]
EMOJI = chars(0x1F600, 0x1F64F) + ["\u2764", "\u263a", "\U0001f9d1", "\U0001f468", "\U0001f469"]
EMOJI_MODS = ["\u200d", "\ufe0f", "\ufe0e"] + chars(0x1F3FB, 0x1F3FF)
FLAGS = chars(0x1F1E6, 0x1F1FF)
DIGITS = chars(0x30, 0x39) + chars(0x660, 0x669) + chars(0xFF10, 0xFF19) + ["²", "½", "Ⅻ", "①", "𝟘"]
SPACES = [" ", " ", " ", "\t", "\n", "\n", "\r\n", "\r", "\x0b", "\x0c", "\xa0", "\x85", "\u2028", "\u2029",
          "\u3000", "\u2003", "\u1680", "\u202f", "\u180e", "\u200b", "\ufeff", "\x1c", "\x1f"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["’", "“", "«", "—", "…", "¿", "©", "€", "\u00ad"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D",
                "''s", " 's", "'", "’s", "'sss", "'lll"]
SPECIALS = ["<|endoftext|>", "<|endoftext", "<|endoftext|", "endoftext|>", "<|", "|>",
            "<|endoftext|><|endoftext|>", "<<|endoftext|>>", "\n<|endoftext|>\n", "<|endoftext|>'s", "<|ENDOFTEXT|>"]
CONTROL = ["\x00", "\x07", "\x1b", "\x7f", "\x80", "\ufffd", "\ue000", "\U0010fffd", "\uffff"]
INVALID = [b"\xff", b"\xfe", b"\x80", b"\xc0\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
           b"\xf0\x9f\x98", b"\xe0\x80\xaf", b"\xc3\x28"]


def fragment(rng):
    k = rng.random()
    if k < 0.20:
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 8)))
    if k < 0.28:
        return "".join(rng.choice(rng.choice(SCRIPTS)) for _ in range(rng.randint(1, 6)))
    if k < 0.33:
        return "".join(rng.choice(LETTERS) + (rng.choice(COMBINING) if rng.random() < 0.5 else "") for _ in range(3))
    if k < 0.40:
        return "".join(rng.choice(EMOJI) + "".join(rng.choice(EMOJI_MODS) for _ in range(rng.randint(0, 2)))
                       for _ in range(rng.randint(1, 3)))
    if k < 0.42:
        return rng.choice(FLAGS) + rng.choice(FLAGS)
    if k < 0.50:
        return "".join(rng.choice(DIGITS) for _ in range(rng.randint(1, 9)))
    if k < 0.66:
        return "".join(rng.choice(SPACES) for _ in range(rng.randint(1, 6)))
    if k < 0.74:
        return "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 4)))
    if k < 0.82:
        return rng.choice(CONTRACTIONS)
    if k < 0.87:
        return rng.choice(SPECIALS)
    if k < 0.90:
        return rng.choice(CONTROL)
    if k < 0.92:  # over 256 bytes: BPE's other path
        return rng.choice(["a", "ab", " ", "0", "!", "é", "\n", "😀", "\t "]) * rng.randint(100, 600)
    return " " * rng.randint(1, 4)


def random_doc(rng, nfrag, invalid):
    out = bytearray()
    for _ in range(nfrag):
        out += rng.choice(INVALID) if invalid and rng.random() < 0.15 else fragment(rng).encode()
    return bytes(out)


class Fuzz:
    def __init__(self, tmp):
        self.tmp = tmp
        self.ref = Gpt2Reference(os.path.join(FIX, "gpt2_vocab.json"), os.path.join(FIX, "gpt2_merges.txt"))
        self.tok = os.path.join(tmp, "gpt2.tok")
        self.sixnd("tokenizer", "import-gpt2", "--vocab", os.path.join(FIX, "gpt2_vocab.json"),
                   "--merges", os.path.join(FIX, "gpt2_merges.txt"), "--out", self.tok)
        self.failures = []

    def sixnd(self, *args, stdin=None):
        r = subprocess.run([BIN, *args], input=stdin, capture_output=True)
        if r.returncode != 0:
            raise AssertionError("sixnd %s failed: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
        return r.stdout

    def encode(self, data, ordinary=False, threads=1):
        path = os.path.join(self.tmp, "in.txt")
        with open(path, "wb") as f:
            f.write(data)
        extra = ["--ordinary"] if ordinary else []
        return json.loads(self.sixnd("tokenizer", "encode", "--tokenizer", self.tok, "--input", path,
                                     "--threads", str(threads), *extra))

    def expected(self, data, ordinary=False):
        try:
            return self.ref.encode(data.decode("utf-8"), not ordinary)
        except UnicodeDecodeError:
            return self.ref.encode_bytes(data, not ordinary)

    def check(self, name, data, ordinary=False, decode=False, threads=1):
        got, want = self.encode(data, ordinary, threads), self.expected(data, ordinary)
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            self.failures.append("%s: ids differ at %d: sixnd %s, reference %s (input %r)" % (
                name, at, got[max(0, at - 3):at + 5], want[max(0, at - 3):at + 5], data[:200]))
            return False
        if self.ref.decode(got) != data:
            self.failures.append("%s: the reference does not decode the ids to the input" % name)
        if decode:
            back = self.sixnd("tokenizer", "decode", "--tokenizer", self.tok, stdin=json.dumps(got).encode())
            if back != data:
                self.failures.append("%s: sixnd decode does not give the input back" % name)
        return True


def main():
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sixnd-gpt2-fuzz-") as tmp:
        fz = Fuzz(tmp)
        exp = json.load(open(os.path.join(FIX, "gpt2-expected-ids.json"), encoding="utf-8"))
        for name, case in exp.items():  # the reference itself, against tiktoken's ids
            text = case["text"] if isinstance(case, dict) else open(os.path.join(FIX, name), encoding="utf-8",
                                                                     newline="").read()
            ids = case["ids"] if isinstance(case, dict) else case
            assert fz.ref.encode(text) == ids, "reference disagrees with gpt2-expected-ids.json on " + name

        fixed = [  # named cases (regressions and edges)
            ("U+180E is not whitespace", " \u180e's\n\n\u180e".encode()),
            ("empty", b""),
            ("no trailing newline", b"last line"),
            ("upper-case contractions", b"DON'T I'M WE'LL YOU'VE SHE'D IT'S THEY'RE"),
            ("\\s+(?!\\S)", b"a  b\t\t c \r\n\r\n d   \n"),
            ("partial specials", b"<|endoftext <|endoftext|<|endoftext|>>endoftext|>"),
            ("invalid UTF-8", b"ab\xff\xfe cd\xc3 \xe2\x82x  \xff\n\xed\xa0\x80"),
            ("long word", "Ω".encode() * 5000 + b" " + b"x" * 3000),
        ]
        for name, data in fixed:
            fz.check(name, data, decode=True)

        rng = random.Random(SEED)
        cases = 0
        while time.monotonic() - start < BUDGET * 0.6 and cases < 400:
            data = random_doc(rng, rng.randint(1, 150), invalid=rng.random() < 0.3)
            fz.check("random case %d (seed %d)" % (cases, SEED), data, ordinary=rng.random() < 0.15,
                     decode=cases % 10 == 0)
            cases += 1

        # Past the CLI's 4 MiB chunk, with two threads: chunk ends fall inside whatever is there.
        base = random_doc(random.Random(SEED + 1), 3000, invalid=True)
        big = (base * (4_300_000 // len(base) + 1))[:4_300_000]
        fz.check("4.3 MB input, 2 threads", big, threads=2)

        # The trainer: 1 and 2 threads make the same tokenizer, which round-trips random bytes.
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "wb") as f:
            f.write(random_doc(random.Random(SEED + 2), 4000, invalid=True) + b"<|endoftext|>" +
                    open(os.path.join(FIX, "tinystories_sample.txt"), "rb").read())
        made = []
        for threads in (1, 2):
            out = os.path.join(tmp, "trained%d.tok" % threads)
            fz.sixnd("tokenizer", "train", "--input", corpus, "--vocab-size", "700", "--special", "<|endoftext|>",
                     "--out", out, "--threads", str(threads))
            made.append(open(out, "rb").read())
        if made[0] != made[1]:
            fz.failures.append("tokenizer train: --threads 1 and 2 give different tokenizers")
        blob = bytes(random.Random(SEED + 3).randrange(256) for _ in range(20000)) + b"<|endoftext|> x"
        with open(os.path.join(tmp, "blob"), "wb") as f:
            f.write(blob)
        ids = json.loads(fz.sixnd("tokenizer", "encode", "--tokenizer", os.path.join(tmp, "trained1.tok"),
                                  "--input", os.path.join(tmp, "blob")))
        back = fz.sixnd("tokenizer", "decode", "--tokenizer", os.path.join(tmp, "trained1.tok"),
                        stdin=json.dumps(ids).encode())
        if back != blob:
            fz.failures.append("trained tokenizer: random bytes do not round-trip")

        for f in fz.failures:
            print("FAIL", f)
        print("%d fixed + %d random cases, 1 large input, trainer at 1/2 threads; %d failures (%.1f s)" % (
            len(fixed), cases, len(fz.failures), time.monotonic() - start))
        return 1 if fz.failures else 0


if __name__ == "__main__":
    sys.exit(main())
