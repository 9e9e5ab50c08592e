"""What `sixnd train` feeds, checked against an oracle written from the documented shard format
and sample order (data/loader.h), not from the loader: shards are read here as raw llm.c files,
sample i is tokens [i*T, i*T + T + 1) of their concatenation, a step is `accum` global
micro-batches of world x B consecutive samples (rank r the r-th block of B), and an epoch ends
when fewer than a step's world x B x accum samples remain.

The batches are observed through the losses: with a learning rate of 1e-30 the weights never
change, so each step's logged loss is the mean over the step's rows of the model's loss on that
row alone, which `sixnd eval` measures on a shard holding just the row. Shards of uneven sizes
(an empty one, ones shorter than a row) put rows across shard ends, and the run goes past the
end of an epoch. Under mpirun the run has two ranks with gradient accumulation.
Also: validation losses are those of the first --eval-batches batches of the validation data
at every evaluation, and a shuffled run stopped mid-epoch and resumed logs the uninterrupted
run's losses (the data position survives the checkpoint)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
B, T, ACCUM, STEPS, EVAL_BATCHES = 1, 8, 2, 14, 2
WORLD = 2 if sixnd_files.MPIRUN else 1
SIZES = [37, 5, 0, 61, 12, 90, 3]  # 208 tokens: 25 samples of 8 (+1)


def read_shard(path):
    """An llm.c shard's tokens, from the format alone: 256 int32 header, then uint16 tokens."""
    raw = open(path, "rb").read()
    magic, version, n = np.frombuffer(raw[:12], np.int32)
    assert (magic, version) == (20240520, 1), path
    return np.frombuffer(raw[1024:], np.uint16).astype(np.int64)[:n]


def expected_rows(stream, steps):
    """The samples each step reads, across every rank and micro-step."""
    samples = (len(stream) - 1) // T
    G = WORLD * B
    cursor, out = 0, []
    for _ in range(steps):
        if cursor + G * ACCUM > samples:
            cursor = 0
        out.append(list(range(cursor, cursor + G * ACCUM)))
        cursor += G * ACCUM
    return out


def eval_loss(checkpoint, shard, batch, batches):
    r = subprocess.run([SIXND, "eval", "--checkpoint", checkpoint, "--data", shard, "--batch", str(batch), "--seq-len",
                        str(T), "--batches", str(batches), "--device", "cpu"],
                       capture_output=True, text=True, env=sixnd_files.MPI_ENV, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"eval of {shard} failed: {r.stderr[-1000:]}")
    return json.loads(r.stdout)["loss"]


def train(tmp, name, *extra):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32", "--device",
           "cpu", "--dtype", "fp32", "--train-data", os.path.join(tmp, "s_*.bin"), "--val-data",
           os.path.join(tmp, "val.bin"), "--batch", str(B), "--seq-len", str(T), "--total-batch-tokens",
           str(B * T * WORLD * ACCUM), "--steps", str(STEPS), "--lr", "1e-30", "--schedule", "constant", "--warmup", "0",
           "--eval-every", "5", "--eval-batches", str(EVAL_BATCHES), "--peak-tflops", "1", "--checkpoint-every", "1",
           "--keep-last", "0", "--seed", "3", "--out", out, "--log", log, *extra]
    recs = sixnd_files.run_train(cmd, name, log, ranks=WORLD)
    return out, {r["step"]: r["loss"] for r in recs if r.get("type") == "step"}, recs


def close(a, b, tol=2e-5):
    return abs(a - b) <= tol * abs(b)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(11)
        for i, n in enumerate(SIZES):
            sixnd_files.write_shard(os.path.join(tmp, f"s_{i:03d}.bin"), rng.integers(0, 256, n))
        sixnd_files.write_shard(os.path.join(tmp, "val.bin"), rng.integers(0, 256, 120))
        stream = np.concatenate([read_shard(os.path.join(tmp, f"s_{i:03d}.bin")) for i in range(len(SIZES))])

        out, losses, recs = train(tmp, "plain", "--shuffle", "off")
        first = os.path.join(out, "checkpoints", "step-00000001")
        row_shard = os.path.join(tmp, "row.bin")
        row_loss = {}
        for step, rows in enumerate(expected_rows(stream, STEPS), start=1):
            for s in rows:
                if s not in row_loss:
                    sixnd_files.write_shard(row_shard, stream[s * T:s * T + T + 1])
                    row_loss[s] = eval_loss(first, row_shard, 1, 1)
            want = float(np.mean([row_loss[s] for s in rows]))
            if not close(losses[step], want):
                failures.append(f"step {step}: loss {losses[step]:.7f}, the samples {rows} give {want:.7f}")
        print(f"{STEPS} steps on {WORLD} rank(s) x {ACCUM} micro-steps read the oracle's samples "
              f"({len(row_loss)} distinct rows of {(len(stream) - 1) // T})")

        evals = [r for r in recs if r.get("event") == "eval"]
        for e in evals:
            ck = os.path.join(out, "checkpoints", f"step-{e['step']:08d}")
            want = eval_loss(ck, os.path.join(tmp, "val.bin"), B * WORLD, EVAL_BATCHES)
            if not close(e["val_loss"], want):
                failures.append(f"evaluation at step {e['step']}: val_loss {e['val_loss']}, the first batches give {want}")
        if len(evals) < 2:
            failures.append(f"{len(evals)} evaluations logged, expected one every 5 steps")

        _, whole, _ = train(tmp, "whole", "--shuffle", "on")
        train(tmp, "cut", "--shuffle", "on", "--stop-at", "9")
        _, resumed, _ = train(tmp, "cut", "--shuffle", "on", "--resume", "latest")
        for step in range(10, STEPS + 1):
            if resumed.get(step) is None or not close(resumed[step], whole[step], 1e-6):
                failures.append(f"shuffled, resumed at step 9: step {step} loss {resumed.get(step)}, "
                                f"uninterrupted {whole[step]}")
        if all(close(whole[s], losses[s], 1e-6) for s in range(1, STEPS + 1)):
            failures.append("the shuffled run read the unshuffled run's batches")
    return sixnd_files.report(failures, "the batches sixnd train reads are the documented samples")


if __name__ == "__main__":
    sys.exit(main())
