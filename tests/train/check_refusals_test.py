"""`sixnd train --check` refuses what the run would refuse at its start (ablate checks every run
so before the first): for a model from --init's file too, not only for --init random, a context
shorter than --seq-len, a file that is not there, an --init that names no kind of file; and
--sample-every with a --tokenizer that has no <|endoftext|> to start a sample from. A model that
fits passes, and --check writes nothing. The llm.c file is written here: 1 layer, context 8."""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def write_llmc(path, max_t):
    L, NH, C, V, VP = 1, 2, 16, 256, 256
    n = VP * C + max_t * C + L * (12 * C * C + 13 * C) + 2 * C
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *([20240326, 3, max_t, V, L, NH, C, VP] + [0] * 248)))
        f.write((np.random.default_rng(0).standard_normal(n) * 0.02).astype(np.float32).tobytes())


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data, model, out = os.path.join(tmp, "train.bin"), os.path.join(tmp, "ctx8.bin"), os.path.join(tmp, "run")
        sixnd_files.write_shard(data, list(range(256)) * 4)
        write_llmc(model, 8)

        def check(init, seq_len):
            return subprocess.run([SIXND, "train", "--init", init, "--train-data", data, "--seq-len", str(seq_len), "--out",
                                   out, "--device", "cpu", "--check"], capture_output=True, text=True, env=ENV, timeout=120)

        refused = [("llmc:" + model, 16, ["--seq-len", "max_seq_len 8"]),
                   ("llmc:" + os.path.join(tmp, "missing.bin"), 8, ["missing.bin"]),
                   ("bogus", 8, ["--init", "'bogus'"])]
        for init, seq_len, words in refused:
            r = check(init, seq_len)
            errors = [x for x in r.stderr.splitlines() if "error" in x]
            print(f"--init {init} --seq-len {seq_len} --check: exit {r.returncode}, {r.stderr.strip()!r}")
            if r.returncode == 0 or len(errors) != 1 or not all(w in errors[0] for w in words):
                failures.append(f"--init {init} --seq-len {seq_len}: --check passed what the run refuses "
                                f"(exit {r.returncode}, {r.stderr.strip()!r}; wanted one error naming {words})")
        r = check("llmc:" + model, 8)
        print(f"a model that fits: exit {r.returncode}, {r.stderr.strip()!r}")
        if r.returncode != 0:
            failures.append(f"--check refused a model that fits: {r.stderr.strip()!r}")
        text, tok = os.path.join(tmp, "text.txt"), os.path.join(tmp, "tok.bin")
        with open(text, "w") as f:
            f.write("the cat sat on the mat. " * 40)
        subprocess.run([SIXND, "tokenizer", "train", "--input", text, "--vocab-size", "260", "--out", tok, "--threads", "1"],
                       check=True, capture_output=True, env=ENV)
        r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "260", "--train-data", data,
                            "--tokenizer", tok, "--sample-every", "2", "--seq-len", "16", "--out", out, "--check"],
                           capture_output=True, text=True, env=ENV, timeout=120)
        print(f"--sample-every, a tokenizer without <|endoftext|>: exit {r.returncode}, {r.stderr.strip()!r}")
        if r.returncode == 0 or "--sample-every" not in r.stderr or "<|endoftext|>" not in r.stderr:
            failures.append(f"--sample-every with a tokenizer without <|endoftext|>: --check passed what the run refuses "
                            f"(exit {r.returncode}, {r.stderr.strip()!r})")
        if os.path.exists(out):
            failures.append(f"--check wrote {out}")
    return sixnd_files.report(failures, "train --check refuses what the run refuses at its start")


if __name__ == "__main__":
    sys.exit(main())
