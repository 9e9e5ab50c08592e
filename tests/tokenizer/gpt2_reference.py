"""An independent GPT-2 encoder in Python, for differential tests of sixnd's tokenizer.

It follows the published algorithm (openai/gpt-2 encoder.py): the pre-tokenizer regex, the
bytes_to_unicode table, and BPE that repeatedly merges every occurrence of the lowest-ranked
pair. Special tokens are cut out first, as tiktoken's encode(allowed_special=...) does.

Text that is not valid UTF-8 has no published encoding (GPT-2 and tiktoken take str). sixnd's
rule, which encode_bytes() models: each maximal run of bytes that are not valid UTF-8 is a
pre-token of its own, and the valid text between such runs is pre-tokenized as if the run were
the end (or start) of the text.

Needs the `regex` module (Debian: python3-regex) for \\p{L} and \\p{N}.
"""
import json

try:
    import regex
except ImportError:  # bytes_to_unicode alone needs nothing; Gpt2Reference says what is missing
    regex = None

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Gpt2Reference:
    def __init__(self, vocab_path, merges_path, specials=("<|endoftext|>",)):
        with open(vocab_path, encoding="utf-8") as f:
            self.encoder = json.load(f)
        ranks = {}
        with open(merges_path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#version"):
                    continue
                a, b = line.split(" ")
                ranks[(a, b)] = len(ranks)
        self.ranks = ranks
        self.byte_encoder = bytes_to_unicode()
        if regex is None:
            raise ImportError("Gpt2Reference needs the regex module (Debian: python3-regex)")
        self.pat = regex.compile(GPT2_PATTERN)
        self.specials = {s: self.encoder[s] for s in specials}
        self.special_pat = (
            regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=len, reverse=True)))
            if specials else None)
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            first, second = best
            out, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                    out.append(first + second)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        ids = [self.encoder[w] for w in word]
        if len(token) <= 64:
            self.cache[token] = ids
        return ids

    def _piece_ids(self, piece_bytes):
        return self.bpe("".join(self.byte_encoder[b] for b in piece_bytes))

    def pieces_ordinary(self, text):
        """Pre-tokens (str) of valid text."""
        return self.pat.findall(text)

    def encode_ordinary(self, text):
        ids = []
        for piece in self.pat.findall(text):
            ids.extend(self._piece_ids(piece.encode("utf-8")))
        return ids

    def encode(self, text, allowed_special=True):
        """tiktoken's encode(text, allowed_special="all") (or encode_ordinary when False)."""
        if not allowed_special or self.special_pat is None:
            return self.encode_ordinary(text)
        ids, pos = [], 0
        for m in self.special_pat.finditer(text):
            ids.extend(self.encode_ordinary(text[pos:m.start()]))
            ids.append(self.specials[m.group()])
            pos = m.end()
        ids.extend(self.encode_ordinary(text[pos:]))
        return ids

    # --- bytes, possibly invalid UTF-8 (sixnd's rule, see the module comment) ---

    @staticmethod
    def utf8_segments(data):
        """[(valid, bytes)] covering data: maximal valid UTF-8 runs and maximal invalid runs."""
        segs, i, n = [], 0, len(data)
        start, cur_valid = 0, None
        while i < n:
            b = data[i]
            ln = 1 if b < 0x80 else 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 0
            ok = False
            if ln:
                try:
                    data[i:i + ln].decode("utf-8")
                    ok = len(data[i:i + ln]) == ln
                except UnicodeDecodeError:
                    ok = False
            step = ln if ok else 1
            if cur_valid is None:
                cur_valid = ok
            elif ok != cur_valid:
                segs.append((cur_valid, data[start:i]))
                start, cur_valid = i, ok
            i += step
        if n > start:
            segs.append((cur_valid, data[start:]))
        return segs

    def encode_bytes(self, data, allowed_special=True):
        ids = []
        if allowed_special and self.special_pat is not None:
            # Specials are plain byte strings: find them in the bytes first.
            spat = regex.compile(b"|".join(regex.escape(s.encode()) for s in sorted(self.specials, key=len, reverse=True)))
            pos = 0
            for m in spat.finditer(data):
                ids.extend(self.encode_bytes(data[pos:m.start()], False))
                ids.append(self.specials[m.group().decode()])
                pos = m.end()
            ids.extend(self.encode_bytes(data[pos:], False))
            return ids
        for valid, seg in self.utf8_segments(data):
            if valid:
                ids.extend(self.encode_ordinary(seg.decode("utf-8")))
            else:
                ids.extend(self._piece_ids(seg))
        return ids

    def decode(self, ids):
        inv = {v: k for k, v in self.encoder.items()}
        byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        out = bytearray()
        for i in ids:
            tok = inv[i]
            if tok in self.specials:
                out += tok.encode()
            else:
                out += bytes(byte_decoder[c] for c in tok)
        return bytes(out)
