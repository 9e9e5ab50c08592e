"""Training parity with PyTorch: `sixnd train` (FP32, CPU) from an llm.c model file, against
torch.optim.AdamW (betas 0.9/0.95, eps 1e-8) on the same weights and tokens — per-step losses
to 1e-4 relative, the step records' grad_norm (the global norm before clipping, of the gradient
averaged over the micro-batches) and clip_scale, and the final parameters — without and with
gradient clipping and weight decay (matrices only), and with gradient accumulation."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from torch_peer import torch  # noqa: E402  (ends the test as skipped without PyTorch)
import sixnd_files  # noqa: E402
import torch_training  # noqa: E402
import torch_gpt2 as ref  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
LOSS_TOL = 1e-4
PARAM_TOL = 1e-4  # relative Frobenius error of each parameter tensor after training
NORM_TOL = 1e-5  # relative error of grad_norm and clip_scale (seen: 1e-7)


def run_case(tmp, name, cfg, B, T, steps, lr, wd, clip, accum):
    model = ref.GPT2(cfg, dtype=torch.float64, sdpa=False)
    model.init_gpt2(seed=11)
    tensors = {n: model.p(n).detach().float().double() for n, _ in ref.tensor_shapes(cfg)}
    ref.load_into(model, tensors)
    mpath = os.path.join(tmp, name + ".bin")
    ref.write_llmc(mpath, cfg, tensors, version=3)
    g = torch.Generator().manual_seed(3)
    ntok = steps * accum * B * T + 1
    tok = torch.randint(0, cfg.vocab_size, (ntok,), generator=g)
    spath = os.path.join(tmp, name + "_train.bin")
    sixnd_files.write_shard(spath, tok.tolist())

    run = os.path.join(tmp, name + "_run")
    log = os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "llmc:" + mpath, "--train-data", spath, "--shuffle", "off", "--device", "cpu",
           "--dtype", "fp32", "--batch", str(B), "--seq-len", str(T), "--steps", str(steps), "--lr", str(lr),
           "--weight-decay", str(wd), "--grad-clip", str(clip), "--schedule", "constant", "--warmup", "0",
           "--log", log, "--out", run, "--total-batch-tokens", str(accum * B * T), "--attention", "flash"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    got = [json.loads(l) for l in open(log)]
    got_losses = [r["loss"] for r in got if r.get("type") == "step"]
    got_norms = [(r["grad_norm"], r["clip_scale"]) for r in got if r.get("type") == "step"]

    opt = torch_training.adamw(model.params.values(), lr, wd)
    ref_losses, ref_norms = [], []
    for s in range(steps):
        opt.zero_grad()
        total = 0.0
        for a in range(accum):
            base = (s * accum + a) * B * T
            chunk = tok[base:base + B * T + 1]
            _, loss = model(chunk[:-1].view(B, T), chunk[1:].view(B, T))
            (loss / accum).backward()
            total += loss.item() / accum
        ref_norms.append(torch_training.clip_grads(model.parameters(), clip))
        opt.step()
        ref_losses.append(total)

    failures = []
    for i, (g, r) in enumerate(zip(got_norms, ref_norms)):
        for what, a, b in (("grad_norm", g[0], r[0]), ("clip_scale", g[1], r[1])):
            if abs(a - b) > NORM_TOL * abs(b):
                failures.append(f"{name}: step {i + 1} {what} {a} vs {b}")
    print(f"{name}: (grad_norm, clip_scale) sixnd {got_norms}, torch {ref_norms}")
    ckpt = os.path.join(run, "checkpoints", f"step-{steps:08d}")
    return failures + torch_training.compare(name, got_losses, ref_losses, steps, ckpt, model.p, cfg.vocab_size,
                                             LOSS_TOL, PARAM_TOL)


def main():
    cfg = ref.Config(n_layer=2, n_head=2, n_embd=48, vocab_size=211, max_seq_len=32)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        failures += run_case(tmp, "plain", cfg, B=2, T=16, steps=5, lr=1e-3, wd=0.0, clip=0.0, accum=1)
        failures += run_case(tmp, "clip_wd", cfg, B=2, T=16, steps=5, lr=1e-3, wd=0.1, clip=0.5, accum=1)
        failures += run_case(tmp, "accum", cfg, B=2, T=8, steps=4, lr=2e-3, wd=0.1, clip=1.0, accum=3)
    return sixnd_files.report(failures, "torch training parity")


if __name__ == "__main__":
    sys.exit(main())
