"""Validation bits per byte = loss x tokens / (bytes x ln 2), with the bytes recomputed here by
decoding the validation tokens that were scored: in the training log (every eval record), the
train summary, and `sixnd eval --tokenizer`; without a tokenizer, loss only and a note.
`sixnd eval --checkpoint` on a run's last checkpoint gives the run's own last validation loss and
bits per byte (the checkpoint's tokenizer), for GPT-2 and for a knob model (llama-tiny), and
refuses model flags, another --dtype and a --per-item file inside the checkpoint."""
import json
import math
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def shard_tokens(path):
    raw = open(path, "rb").read()
    n = struct.unpack("256i", raw[:1024])[2]
    return list(struct.unpack(f"{n}H", raw[1024:1024 + 2 * n]))


def decoded_bytes(tok, ids, tmp):
    src, dst = os.path.join(tmp, "ids.json"), os.path.join(tmp, "ids.txt")
    json.dump(ids, open(src, "w"))
    tiny_text.sixnd("tokenizer", "decode", "--tokenizer", tok, "--input", src, "--out", dst)
    return os.path.getsize(dst)


def bpb(loss, tokens, nbytes):
    return loss * tokens / (nbytes * math.log(2))


def check_checkpoint_eval(p, model, tmp, failures):
    """The run's last evaluation (B 2, T 16, 3 batches of the validation shard) again from its
    last checkpoint, in a new process."""
    flags = tiny_text.train_flags(p, steps=4)
    flags[flags.index("--model") + 1] = model
    out, log = os.path.join(tmp, "ck_" + model), os.path.join(tmp, f"ck_{model}.jsonl")
    r = tiny_text.sixnd("train", *flags, "--log", log, "--out", out)
    ck = json.loads(r.stdout.strip().splitlines()[-1])["checkpoint"]
    last = [json.loads(line) for line in open(log) if '"val_loss"' in line and '"type":"step"' in line][-1]
    base = ["eval", "--checkpoint", ck, "--device", "cpu", "--data", p["val"], "--batch", "2", "--seq-len", "16",
            "--batches", "3"]
    got = json.loads(tiny_text.sixnd(*base).stdout.strip().splitlines()[-1])
    print(f"eval --checkpoint ({model}): loss {got['loss']:.7f} bpb {got.get('bpb')}; the run's step "
          f"{last['step']}: {last['val_loss']:.7f} {last.get('val_bpb')}")
    if abs(got["loss"] - last["val_loss"]) > 1e-6 * last["val_loss"] or \
            abs(got.get("bpb", 0) - last["val_bpb"]) > 1e-6 * last["val_bpb"] or got.get("model") != "checkpoint:" + ck:
        failures.append(f"eval --checkpoint ({model}): {got}, the run's last evaluation {last}")
    for name, extra, expect in [("--model", ["--model", "tiny"], "fixes the model"),
                                ("--dtype", ["--dtype", "bf16"], "fp32"),
                                ("--per-item", ["--task", "hellaswag", "--per-item", os.path.join(ck, "items.jsonl")],
                                 "inside the checkpoint")]:
        r = tiny_text.sixnd(*base, *extra, check=False)
        if r.returncode == 0 or expect not in r.stderr or (name not in r.stderr and "items.jsonl" not in r.stderr):
            failures.append(f"eval --checkpoint with {name}: exit {r.returncode}: {r.stderr.strip()}")


def check_eval_batches_beyond_the_data(p, tmp, failures):
    """--eval-batches beyond what the validation data holds: a warning naming the flag at the start,
    every evaluation over all the data holds, and its eval event saying how many batches that is
    (the loss `sixnd eval --batches` that many gives)."""
    B, T = 2, 16
    held = (len(shard_tokens(p["val"])) - 1) // (B * T)
    flags = tiny_text.train_flags(p, steps=2, batch=B, seq_len=T)
    flags[flags.index("--eval-batches") + 1] = "100000"
    log = os.path.join(tmp, "beyond.jsonl")
    r = tiny_text.sixnd("train", *flags, "--log", log, "--out", os.path.join(tmp, "beyond"))
    events = [json.loads(line) for line in open(log) if '"event":"eval"' in line]
    ck = json.loads(r.stdout.strip().splitlines()[-1])["checkpoint"]
    got = json.loads(tiny_text.sixnd("eval", "--checkpoint", ck, "--device", "cpu", "--data", p["val"], "--batch", str(B),
                                     "--seq-len", str(T), "--batches", str(held)).stdout.strip().splitlines()[-1])
    print(f"--eval-batches 100000 over {held} held batches: events {[e.get('batches') for e in events]}")
    if "--eval-batches 100000" not in r.stderr or f"uses {held}" not in r.stderr:
        failures.append(f"--eval-batches beyond the data: no warning naming it: {r.stderr.strip()}")
    if not events or any(e.get("batches") != held for e in events):
        failures.append(f"--eval-batches beyond the data: eval events {events}, expected batches {held}")
    elif abs(events[-1]["val_loss"] - got["loss"]) > 1e-6 * got["loss"]:
        failures.append(f"--eval-batches beyond the data: val_loss {events[-1]['val_loss']}, eval over {held}: {got}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        val = shard_tokens(p["val"])
        B, T, batches = 2, 16, 3
        log = os.path.join(tmp, "run.jsonl")
        r = tiny_text.sixnd("train", *tiny_text.train_flags(p, steps=6, batch=B, seq_len=T), "--log", log,
                            "--out", os.path.join(tmp, "run"))
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        # One process, no shuffle: the evaluation's targets are validation tokens [1, batches*B*T].
        nbytes = decoded_bytes(p["tokenizer"], val[1:batches * B * T + 1], tmp)
        evals = [json.loads(line) for line in open(log) if '"val_loss"' in line and '"step"' in line]
        steps = [e for e in evals if e["type"] == "step"]
        if len(steps) != 2:
            failures.append(f"expected 2 evaluations in the log, found {len(steps)}")
        for e in evals:
            want = bpb(e["val_loss"], batches * B * T, nbytes)
            if "val_bpb" not in e or abs(e["val_bpb"] - want) > 1e-9 * want:
                failures.append(f"log {e['type']} step {e['step']}: val_bpb {e.get('val_bpb')}, recomputed {want}")
        counted = [json.loads(line).get("batches") for line in open(log) if '"event":"eval"' in line]
        if counted != [batches] * len(steps):
            failures.append(f"eval events record batches {counted}, expected {batches} each")
        check_eval_batches_beyond_the_data(p, tmp, failures)
        print(f"train: val loss {steps[-1]['val_loss']:.5f} nats/token over {batches * B * T} tokens = {nbytes} bytes "
              f"-> {steps[-1].get('val_bpb')} bits/byte")
        if abs(summary.get("val_bpb", -1) - steps[-1].get("val_bpb", -2)) > 1e-12:
            failures.append(f"summary val_bpb {summary.get('val_bpb')} differs from the log's")

        ev = ["eval", "--init", "random", "--model", "tiny", "--vocab-size", str(tiny_text.VOCAB), "--max-seq-len", "32",
              "--device", "cpu", "--dtype", "fp32", "--data", p["val"], "--batch", "4", "--seq-len", "8",
              "--batches", "5"]
        out = json.loads(tiny_text.sixnd(*ev, "--tokenizer", p["tokenizer"]).stdout.strip().splitlines()[-1])
        nbytes = decoded_bytes(p["tokenizer"], val[1:5 * 4 * 8 + 1], tmp)
        want = bpb(out["loss"], 160, nbytes)
        print(f"eval: loss {out['loss']:.5f} over 160 tokens = {nbytes} bytes -> {out.get('bpb')} bits/byte")
        if not isinstance(out.get("bytes"), int) or out.get("bytes") != nbytes or abs(out.get("bpb", 0) - want) > 1e-9 * want:
            failures.append(f"sixnd eval: bytes {out.get('bytes')} bpb {out.get('bpb')}, recomputed {nbytes} {want}")

        for model in ("tiny", "llama-tiny"):
            check_checkpoint_eval(p, model, tmp, failures)

        r = tiny_text.sixnd(*ev)
        if "bpb" in r.stdout or "no --tokenizer" not in r.stderr:
            failures.append(f"eval without --tokenizer: {r.stdout.strip()} / {r.stderr.strip()}")
        flags = tiny_text.train_flags(p, steps=2)
        flags = flags[:flags.index("--tokenizer")] + flags[flags.index("--tokenizer") + 2:]
        log2 = os.path.join(tmp, "plain.jsonl")
        r = tiny_text.sixnd("train", *flags, "--log", log2, "--out", os.path.join(tmp, "plain"))
        if "val_bpb" in open(log2).read() or "bits per byte" not in r.stderr:
            failures.append("train without --tokenizer: expected no val_bpb and a note on stderr")
    return sixnd_files.report(failures, "bits per byte from the decoded validation bytes")


if __name__ == "__main__":
    sys.exit(main())
