"""`sixnd data prepare`'s manifest against what a Python reader finds in its inputs and shards:
the shards hold, each after one end-of-text token, exactly the kept documents (validation ones
once, in input order; training ones as many times as their source's weight says, floor or
ceiling), no document on both sides (nor a copy of one, with dedup off, when a small corpus holds
one document out), and the manifest's counts of them; and the language counts
and the count of documents whose invalid UTF-8 was repaired cover only the documents that reached
those stages (a file skipped under --on-error skip was counted there too, by what it gave before
its fault); a document of nothing but white space,
Unicode's included (no-break, ideographic, line separator), is removed as empty (one of such
spaces alone was kept as a document)."""
import collections
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from sixnd_files import report, write_shard  # noqa: E402

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)
SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
WORDS = ("apple river stone bridge quiet morning garden letter window market yellow silver winter summer forest "
         "candle engine harbor pencil ladder the of and to in is it that was with").split()


def random_text(seed, n=60):
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "\n"


def sixnd(*args):
    r = subprocess.run([SIXND, *args], capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        raise RuntimeError(f"sixnd {' '.join(args[:2])} failed ({r.returncode}): {r.stderr.strip()[-800:]}")
    return r


def write_jsonl(path, texts, gz=False):
    data = "".join(json.dumps({"text": t}) + "\n" for t in texts).encode()
    with open(path, "wb") as f:
        f.write(gzip.compress(data, mtime=0) if gz else data)


def split_docs(d, out, m, split, tok):
    """The documents of one split: its shards joined, cut at each end-of-text token, decoded."""
    parts = []
    for s in m["output"][split]["shards"]:
        raw = open(os.path.join(out, s["file"]), "rb").read()
        magic, version, n = struct.unpack("<3i", raw[:12])
        assert (magic, version, len(raw)) == (20240520, 1, 1024 + 2 * n) and n == s["tokens"], (s, magic, version, n)
        parts.append(np.frombuffer(raw[1024:], np.uint16))
    if not parts:
        return []
    tokens = np.concatenate(parts)
    eot = m["tokenizer"]["eot"]["id"]
    if tokens[0] != eot:
        raise AssertionError(f"{split} does not start with the end-of-text token")
    joined = os.path.join(d, f"_{split}_all.bin")
    write_shard(joined, tokens)
    text = sixnd("tokenizer", "decode", "--tokenizer", tok, "--input", joined, "--out", "-").stdout
    return text.split(m["tokenizer"]["eot"]["token"])[1:]


def shards_match_sources(d, tok, failures):
    weights = {"a": 0.5, "b": 2.5, "c": 1}
    texts = {}
    for s in weights:
        os.makedirs(os.path.join(d, s))
        texts[s] = [random_text(f"{s}{i}") for i in range(60)]
        write_jsonl(os.path.join(d, s, "docs.jsonl"), texts[s])
    out = os.path.join(d, "mixed")
    sixnd("data", "prepare", "--tokenizer", tok, "--out", out, "--no-langid", "--no-quality", "--no-repetition",
          "--val-fraction", "0.1", "--shard-tokens", "997",
          *[x for s, w in weights.items() for x in ("--source", f"{s}={os.path.join(d, s)}:{w}")])
    m = json.load(open(os.path.join(out, "manifest.json")))
    source_of = {t: s for s, ts in texts.items() for t in ts}
    train, val = (split_docs(d, out, m, split, tok) for split in ("train", "val"))
    strangers = [t for t in train + val if t not in source_of]
    if strangers:
        failures.append(f"shards hold {len(strangers)} documents no source has, e.g. {strangers[0][:60]!r}")
        return
    if set(train) & set(val):
        failures.append(f"{len(set(train) & set(val))} documents are in both train and val")
    order = [t for s in weights for t in texts[s]]
    if val != [t for t in order if t in set(val)]:
        failures.append("validation documents are not in input order")
    copies = collections.Counter(train)
    for s, w in weights.items():
        kept = [t for t in texts[s] if t not in set(val)]
        got = [copies[t] for t in kept]
        if any(c not in (int(w), int(w) + (w % 1 > 0)) for c in got):
            failures.append(f"source {s} (weight {w}): copies {sorted(set(got))}")
        mix = next(x for x in m["mixing"]["sources"] if x["source"] == s)
        if (mix["documents_in"], mix["copies_out"]) != (len(kept), sum(got)):
            failures.append(f"source {s}: manifest says {mix['documents_in']} in, {mix['copies_out']} out; "
                            f"the shards hold {len(kept)} and {sum(got)}")
    if (m["split"]["val_documents"], m["output"]["val"]["documents"], m["output"]["train"]["documents"]) != (
            len(val), len(val), len(train)):
        failures.append(f"manifest split {m['split']} and output counts do not match the shards "
                        f"({len(val)} val, {len(train)} train documents)")


def held_out_copies_not_trained_on(d, tok, failures):
    """A corpus too small for --val-fraction still holds one document out: with dedup off, the
    copies of that document go with it (they went on training)."""
    src = os.path.join(d, "twice")
    os.makedirs(src)
    texts = [random_text(f"t{i}") for i in range(6)]
    write_jsonl(os.path.join(src, "x.jsonl"), texts + texts)
    out = os.path.join(d, "twice_out")
    sixnd("data", "prepare", "--tokenizer", tok, "--out", out, "--source", "s=" + src, "--no-langid", "--no-quality",
          "--no-repetition", "--no-dedup-exact", "--no-dedup-near")
    m = json.load(open(os.path.join(out, "manifest.json")))
    train, val = (split_docs(d, out, m, split, tok) for split in ("train", "val"))
    if len(val) != 2 or len(set(val)) != 1 or set(train) & set(val) or len(train) != 10:
        failures.append(f"copies of one document: {len(val)} held out ({len(set(val))} distinct), {len(train)} "
                        f"trained on, {len(set(train) & set(val))} on both sides (expected 2, 1, 10 and 0)")


def languages_of_reached_documents(d, tok, failures):
    src = os.path.join(d, "skip")
    os.makedirs(src)
    # A lone surrogate (json.dumps writes it escaped) is invalid UTF-8, repaired at ingest.
    write_jsonl(os.path.join(src, "good.jsonl"), [random_text(f"g{i}") + "\ud800" * (i % 4 == 0) for i in range(40)])
    write_jsonl(os.path.join(src, "cut.jsonl.gz"), [random_text(f"c{i}") + "\ud800" for i in range(400)], gz=True)
    cut = os.path.join(src, "cut.jsonl.gz")
    data = open(cut, "rb").read()
    open(cut, "wb").write(data[:len(data) * 2 // 3])  # a download cut short: some documents, then the fault
    out = os.path.join(d, "skipped")
    sixnd("data", "prepare", "--tokenizer", tok, "--out", out, "--source", "s=" + src, "--on-error", "skip",
          "--no-quality", "--no-repetition", "--min-lang-confidence", "0", "--langs", "en,fr,de")
    m = json.load(open(os.path.join(out, "manifest.json")))
    skipped = [f for f in m["inputs"] if "skipped" in f]
    if len(skipped) != 1 or skipped[0]["documents"] == 0:
        failures.append(f"the cut file should be skipped after giving some documents: {m['inputs']}")
        return
    langid = next(s for s in m["stages"] if s["stage"] == "langid")
    if sum(langid["languages"].values()) != langid["documents"]["in"]:
        failures.append(f"langid counts languages of {sum(langid['languages'].values())} documents "
                        f"({langid['languages']}) but {langid['documents']['in']} reached it")
    repaired = m["stages"][0]["invalid_utf8_repaired"]
    if repaired != 10:
        failures.append(f"ingest counts {repaired} documents repaired; good.jsonl's 10 are all that were not withdrawn")


def unicode_blank_documents_empty(d, tok, failures):
    src = os.path.join(d, "blank")
    os.makedirs(src)
    blank = ["\u00a0\u3000\n\u2028 ", "\u2003", "\t\u0085\u202f"]
    texts = [random_text(f"w{i}") for i in range(3)]
    write_jsonl(os.path.join(src, "x.jsonl"), blank + texts)
    out = os.path.join(d, "blank_out")
    sixnd("data", "prepare", "--tokenizer", tok, "--out", out, "--source", "s=" + src, "--no-langid", "--no-quality",
          "--no-repetition", "--val-fraction", "0")
    m = json.load(open(os.path.join(out, "manifest.json")))
    ingest = m["stages"][0]["removed_by"]
    if ingest != {"empty": len(blank)}:
        failures.append(f"white-space documents: ingest removed {ingest}, expected {{'empty': {len(blank)}}}")
    kept = split_docs(d, out, m, "train", tok)
    if sorted(kept) != sorted(texts):
        failures.append(f"white-space documents: the shards hold {[t[:20] for t in kept]}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "corpus.txt")
        open(corpus, "w").write("".join(random_text(i, 200) for i in range(20)))
        tok = os.path.join(d, "tok.bin")
        sixnd("tokenizer", "train", "--input", corpus, "--vocab-size", "300", "--special", "<|endoftext|>", "--out", tok)
        shards_match_sources(d, tok, failures)
        held_out_copies_not_trained_on(d, tok, failures)
        languages_of_reached_documents(d, tok, failures)
        unicode_blank_documents_empty(d, tok, failures)
    return report(failures, "data prepare manifest against its inputs and shards")


if __name__ == "__main__":
    sys.exit(main())
