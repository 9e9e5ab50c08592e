"""Muon parity with PyTorch: `sixnd train --optimizer muon` (FP32, CPU) from an llm.c model file,
against Muon as Keller Jordan published it, written here in float64 from the description
(Nesterov momentum, quintic Newton-Schulz with (3.4445, -4.7750, 2.0315) for 5 steps after
Frobenius normalisation, on the transpose of tall matrices, update scaled by
sqrt(max(1, rows/cols)), decoupled weight decay) for every 2-D tensor inside a block, and
torch.optim.AdamW (betas 0.9/0.95, eps 1e-8, weight decay on matrices) for the rest. Per-step
losses to 1e-4 relative and the final parameters, with a constant schedule and with warm-up,
clipping and both weight decays. Muon's rate follows the schedule: --muon-lr times lr/--lr,
with lr read from sixnd's log."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from torch_peer import torch  # noqa: E402  (ends the test as skipped without PyTorch)
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
import torch_training  # noqa: E402
import torch_gpt2 as ref  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
LOSS_TOL = 1e-4
PARAM_TOL = 1e-4


def orthogonalise(g, steps=5):
    """The quintic Newton-Schulz iterate of g (float64)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = g.shape[0] > g.shape[1]
    x = g.t() if tall else g
    x = x / (torch.linalg.matrix_norm(x) + 1e-7)
    for _ in range(steps):
        gram = x @ x.t()
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.t() if tall else x


class MuonRef:
    def __init__(self, params, momentum, wd):
        self.params, self.momentum, self.wd = params, momentum, wd
        self.buf = [torch.zeros_like(p) for p in params]

    @torch.no_grad()
    def step(self, lr):
        for p, m in zip(self.params, self.buf):
            m.mul_(self.momentum).add_(p.grad, alpha=1 - self.momentum)
            u = (1 - self.momentum) * p.grad + self.momentum * m
            o = orthogonalise(u) * max(1.0, p.shape[0] / p.shape[1]) ** 0.5
            p.mul_(1 - lr * self.wd).sub_(lr * o)


def run_case(tmp, name, cfg, B, T, steps, lr, muon_lr, momentum, wd, muon_wd, clip, warmup):
    model = ref.GPT2(cfg, dtype=torch.float64, sdpa=False)
    model.init_gpt2(seed=13)
    tensors = {n: model.p(n).detach().float().double() for n, _ in ref.tensor_shapes(cfg)}
    ref.load_into(model, tensors)
    mpath = os.path.join(tmp, name + ".bin")
    ref.write_llmc(mpath, cfg, tensors, version=3)
    g = torch.Generator().manual_seed(5)
    tok = torch.randint(0, cfg.vocab_size, (steps * B * T + 1,), generator=g)
    spath = os.path.join(tmp, name + "_train.bin")
    sixnd_files.write_shard(spath, tok.tolist())

    run = os.path.join(tmp, name + "_run")
    log = os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "llmc:" + mpath, "--train-data", spath, "--shuffle", "off", "--device", "cpu",
           "--dtype", "fp32", "--batch", str(B), "--seq-len", str(T), "--steps", str(steps), "--lr", str(lr),
           "--weight-decay", str(wd), "--grad-clip", str(clip), "--schedule", "constant", "--warmup", str(warmup),
           "--optimizer", "muon", "--muon-lr", str(muon_lr), "--muon-momentum", str(momentum),
           "--muon-weight-decay", str(muon_wd), "--log", log, "--out", run, "--attention", "flash"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    recs = [json.loads(l) for l in open(log)]
    header = recs[0]
    got = [r for r in recs if r.get("type") == "step"]
    got_losses = [r["loss"] for r in got]

    names = [n for n, _ in ref.tensor_shapes(cfg)]
    hidden = [n for n in names if n.startswith("h.") and model.p(n).dim() == 2]
    rest = [n for n in names if n not in hidden]
    muon = MuonRef([model.p(n) for n in hidden], momentum, muon_wd)
    adam = torch_training.adamw([model.p(n) for n in rest], lr, wd)
    ref_losses = []
    for s in range(steps):
        for p in model.parameters():
            p.grad = None
        chunk = tok[s * B * T:(s + 1) * B * T + 1]
        _, loss = model(chunk[:-1].view(B, T), chunk[1:].view(B, T))
        loss.backward()
        torch_training.clip_grads(model.parameters(), clip)
        step_lr = got[s]["lr"] if s < len(got) else lr
        for group in adam.param_groups:
            group["lr"] = step_lr
        adam.step()
        muon.step(muon_lr * step_lr / lr)
        ref_losses.append(loss.item())

    failures = []
    if header["config"].get("optimizer") != "muon":
        failures.append(f"{name}: the log header's config says optimizer {header['config'].get('optimizer')}")
    if not header.get("optimizer_flops_per_step", 0) > 0:
        failures.append(f"{name}: no Newton-Schulz FLOPs in the log header")
    ckpt = os.path.join(run, "checkpoints", f"step-{steps:08d}")
    failures += torch_training.compare(name, got_losses, ref_losses, steps, ckpt, model.p, cfg.vocab_size, LOSS_TOL,
                                       PARAM_TOL, determined_only=True)
    params = sixnd_files.checkpoint_params(ckpt)
    # Muon moved the hidden matrices by about lr per element-RMS: a run that left them alone fails.
    moved = max(np.linalg.norm(params[n] - tensors[n].numpy()) for n in hidden)
    if moved < 1e-3:
        failures.append(f"{name}: the hidden matrices barely moved ({moved:.1e})")
    return failures


def main():
    cfg = ref.Config(n_layer=2, n_head=2, n_embd=48, vocab_size=211, max_seq_len=32)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        failures += run_case(tmp, "plain", cfg, B=2, T=16, steps=5, lr=1e-3, muon_lr=0.02, momentum=0.95, wd=0.0,
                             muon_wd=0.0, clip=0.0, warmup=0)
        failures += run_case(tmp, "warmup_clip_wd", cfg, B=2, T=16, steps=5, lr=2e-3, muon_lr=0.05, momentum=0.9,
                             wd=0.1, muon_wd=0.2, clip=0.5, warmup=3)
    return sixnd_files.report(failures, "Muon training parity with PyTorch")


if __name__ == "__main__":
    sys.exit(main())
