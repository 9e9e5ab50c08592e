"""`sixnd train --config FILE`: every fault of a value the file gave is reported at FILE:LINE —
a key given twice (at the second line, naming the first), a value CLI11 cannot convert, and a
value out of range, though the range checks run after parsing and name only the flag. A flag
on the command line wins over the file, so a bad value there is the command line's, and a bad
value in the file that the command line overrides is never used. A '#' after a blank (a tab too)
or at a value's start begins a comment, also after a section header; a long line (another file
given by mistake) is quoted back cut short; a leading byte-order mark is read past. Integers are decimal: a leading zero or a 0x prefix is
refused at its line, not read as C's octal or hexadecimal."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from bad_input import Case, run_cases  # noqa: E402

ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def main():
    tmp = tempfile.mkdtemp(prefix="sixnd_config_file_")
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    data = os.path.join(tmp, "train.bin")
    sixnd_files.write_shard(data, [(i * 7) % 64 for i in range(4000)])
    fresh = os.path.join(tmp, "fresh")  # never created: every refused case must leave it absent
    base = ["# a tiny run", f'train-data = "{data}"', "init = random", "model = tiny", "vocab-size = 64",
            "max-seq-len = 16", "device = cpu", "dtype = fp32", "seq-len = 8", "steps = 1", "peak-tflops = 1"]
    seq_len_line = base.index("seq-len = 8") + 1
    n = len(base)

    def config(name, *lines):
        p = os.path.join(tmp, name + ".toml")
        with open(p, "w") as f:
            f.write("\n".join(base + list(lines)) + "\n")
        return p

    def train(path, *flags, out=fresh):
        return ["train", "--config", path, "--out", out, *flags]

    dup = config("dup", "batch = 2", "batch = 4")
    spelled = config("spelled", "batch = 1", "seq_len = 8")
    sections = config("sections", "batch = 2", "[train]", "batch = 4")
    dup_and_flag = config("dup_and_flag", "batch = 2", "batch = 4")
    unconvertible = config("unconvertible", "batch = two")
    batch = config("batch", "batch = -1")
    lr = config("lr", "batch = 1", "lr = -0.1")
    stop_at = config("stop_at", "batch = 1", "stop-at = 5")
    overridden = config("overridden", "batch = 2")
    wins = config("wins", "batch = -1", "[sample]", "top_k = 3", "top_k = 4")
    log = os.path.join(tmp, "wins.jsonl")
    zero_byte = config("zero_byte", "ba\0tch = 1")  # the error line quotes it past the zero byte
    muon = config("muon", "batch = 1", "optimizer = muon", "muon-lr = 0.03")
    empty_text = config("empty_text", "batch = 1", "tokenizer =")
    tab_log = os.path.join(tmp, "tab.jsonl")
    tab_comment = config("tab_comment", "batch = 1", f"log = {tab_log}\t# the run log")
    only_comment = config("only_comment", "batch = 1", "tokenizer = # later")
    header_comment = config("header_comment", "[train]  # the run", "batch = 1")
    json_line = os.path.join(tmp, "manifest.json")
    with open(json_line, "w") as f:
        f.write(json.dumps({"shards": [f"shard_{i:06d}.bin" for i in range(5000)]}) + "\n")
    long_key = config("long_key", "k" * 100000 + " = 1")
    octal = config("octal", "batch = 1", "warmup = 010")
    bom = os.path.join(tmp, "bom.toml")
    with open(bom, "wb") as f:
        f.write(b"\xef\xbb\xbf[train]\n" + "\n".join(base + ["batch = 1"]).encode() + b"\n")
    # Windows' "Unicode" (UTF-16 with its mark): named with the conversion, not as an unknown key.
    wide = os.path.join(tmp, "utf16.toml")
    with open(wide, "wb") as f:
        f.write("\n".join(base + ["batch = 1"]).encode("utf-16"))
    prefix_flag = config("prefix_flag", "batch = 1", "mlp = gelu", "mlp-hidden = x")

    def tab_comment_cut():
        stray = [f for f in os.listdir(tmp) if "#" in f]
        return None if os.path.exists(tab_log) and not stray else f"no {tab_log}; files named with the comment: {stray}"

    def command_line_won():
        header = json.loads(open(log).readline())
        return None if header["config"]["batch"] == 1 else f"batch {header['config']['batch']}, expected the flag's 1"

    cases = [
        Case("duplicate key", train(dup), [f"{dup}:{n + 2}: duplicate key 'batch' (first set on line {n + 1})"]),
        Case("duplicate key, another spelling", train(spelled),
             [f"{spelled}:{n + 2}: duplicate key 'seq_len' (first set on line {seq_len_line})"]),
        Case("duplicate key across sections", train(sections),
             [f"{sections}:{n + 3}: duplicate key 'batch' (first set on line {n + 1})"]),
        Case("duplicate key, also on the command line", train(dup_and_flag, "--batch", "1"),
             [f"{dup_and_flag}:{n + 2}: duplicate key 'batch'"]),
        Case("unconvertible value", train(unconvertible), [f"{unconvertible}:{n + 1}: ", "--batch"]),
        Case("batch out of range", train(batch), [f"{batch}:{n + 1}: --batch: must be in [1, ", "got -1"]),
        Case("lr out of range", train(lr), [f"{lr}:{n + 2}: --lr: ", "got -0.1"]),
        Case("stop-at past steps", train(stop_at), [f"{stop_at}:{n + 2}: --stop-at: "]),
        Case("out of range on the command line", train(overridden, "--batch", "-1"),
             ["sixnd train: error: --batch: must be in [1, ", "got -1"]),
        Case("a directory as the config file", train(tmp), [tmp, "is a directory"]),
        Case("a UTF-16 config file", train(wide), [wide, "UTF-16LE text", "iconv -f UTF-16LE -t UTF-8"]),
        Case("a key holding a zero byte", train(zero_byte), [f"{zero_byte}:{n + 1}: ", "'ba\\x00tch'", "no --ba\\x00tch"]),
        Case("a missing config file", train(os.path.join(tmp, "absent.toml")), ["absent.toml"]),
        Case("the command line wins", train(wins, "--batch", "1", "--log", log, out=os.path.join(tmp, "wins")), [],
             exit_code=0, check=command_line_won),
        # The command line's optimizer wins, so the file's Muon knob applies to nothing: said.
        Case("a file's flag the command line makes inert", train(muon, "--optimizer", "adamw", out=os.path.join(tmp, "inert")),
             [], exit_code=0, warns=["--muon-lr has no effect without --optimizer muon"]),
        Case("a file's text value left empty", train(empty_text), [f"{empty_text}:{n + 2}: --tokenizer: is empty"]),
        Case("a comment after a tab", train(tab_comment, out=os.path.join(tmp, "tab")), [], exit_code=0, check=tab_comment_cut),
        Case("a value that is only a comment", train(only_comment), [f"{only_comment}:{n + 2}: --tokenizer: is empty"]),
        Case("a comment after a section header", train(header_comment, out=os.path.join(tmp, "header")), [], exit_code=0),
        Case("a file of one long line", train(json_line), [f"{json_line}:1: expected 'key = value', got '{{\"shards\"", "...'"]),
        # CLI11 alone reads integers as C does: 010 would be 8.
        Case("a file that begins with a byte-order mark", train(bom, out=os.path.join(tmp, "bom")), [], exit_code=0),
        Case("an integer with a leading zero", train(octal), [f"{octal}:{n + 2}: --warmup takes a decimal number", "(write 10)"]),
        # The fault is --mlp-hidden's line, not that of --mlp, whose name begins it.
        Case("a flag whose name begins another's", train(prefix_flag), [f"{prefix_flag}:{n + 3}: ", "--mlp-hidden"]),
        Case("a long unknown key", train(long_key), [f"{long_key}:{n + 1}: unknown key 'kkk", "...' (sixnd train has no --kkk", "...)"]),
    ]
    for c in cases:
        c.env = ENV
        if c.exit_code:
            c.unchanged = [fresh]
    return run_cases(cases, "sixnd train --config: faults at FILE:LINE")


if __name__ == "__main__":
    sys.exit(main())
