"""A tiny text setup for script tests that train: a 320-token BPE tokenizer learnt from the
fixture corpus (corpus.en), its first 110 KB as training shard and the rest as validation
shard, and the `sixnd train` flags of a tiny FP32 model on them."""
import json
import os
import subprocess

SIXND = os.environ["SIXND_BIN"]
SHARED = os.environ.get("SIXND_SHARED", os.path.join(os.environ.get("SIXND_SOURCE", "."), "..", "shared"))
CORPUS = os.path.join(SHARED, "fixtures", "tokenizer", "corpus.en")
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
VOCAB = 320


def sixnd(*args, check=True):
    r = subprocess.run([SIXND, *args], capture_output=True, text=True, env=ENV)
    if check and r.returncode != 0:
        raise RuntimeError(f"sixnd {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()[-800:]}")
    return r


def make(tmp, vocab=VOCAB, prefix=""):
    """{'tokenizer', 'train', 'val'} paths under tmp (file names starting with prefix); the
    tokenizer has `vocab` tokens (at most VOCAB, the model's vocabulary)."""
    text = open(CORPUS, "rb").read()
    paths = {k: os.path.join(tmp, prefix + v) for k, v in
             [("tokenizer", "tok.bin"), ("train", "train.bin"), ("val", "val.bin"), ("train_txt", "train.txt"),
              ("val_txt", "val.txt")]}
    open(paths["train_txt"], "wb").write(text[:110_000])
    open(paths["val_txt"], "wb").write(text[110_000:])
    sixnd("tokenizer", "train", "--input", paths["train_txt"], "--vocab-size", str(vocab), "--out", paths["tokenizer"],
          "--threads", "1")
    for split in ("train", "val"):
        sixnd("tokenizer", "encode", "--tokenizer", paths["tokenizer"], "--input", paths[split + "_txt"],
              "--out", paths[split], "--threads", "1")
    return paths


def train_flags(paths, steps=8, batch=2, seq_len=16):
    return ["--init", "random", "--model", "tiny", "--vocab-size", str(VOCAB), "--max-seq-len", "32", "--device", "cpu",
            "--dtype", "fp32", "--train-data", paths["train"], "--val-data", paths["val"], "--tokenizer",
            paths["tokenizer"], "--batch", str(batch), "--seq-len", str(seq_len), "--steps", str(steps), "--lr", "3e-3",
            "--warmup", "2", "--eval-every", str(max(1, steps // 2)), "--eval-batches", "3", "--peak-tflops", "1"]


def report_source(run, out):
    """What `sixnd report RUN --out OUT` hands its drawing script for RUN (report_input.json's
    source): the log's path, the table's numbers, and the "branch" of lines the plots draw."""
    sixnd("report", run, "--out", out)
    with open(os.path.join(out, "report_input.json")) as f:
        return json.load(f)["sources"][0]
