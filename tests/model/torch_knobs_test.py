"""PyTorch parity for the architecture knobs: sixnd's FP32 CPU path against a float64 PyTorch
model of the same architecture written here, independently (rope, rmsnorm, swiglu, relu2, a
custom MLP width, qk-norm, grouped- and multi-query attention, untied head, no biases), on the
same random weights and tokens. For each knob alone, a llama-style and a speedrun-style
combination: logits, loss and every gradient, both attention kinds, every recompute policy
(tolerances of torch_parity_test.py). Then `sixnd train --model llama-tiny` and
`--model speedrun-tiny` for 5 AdamW steps (weight decay on matrices, clipping) against
torch.optim.AdamW from the same initial weights: per-step losses and final parameters."""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from torch_peer import F, torch  # noqa: E402  (ends the test as skipped without PyTorch)
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from sixnd_files import rel  # noqa: E402
import torch_training  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
DUMP = os.path.join(os.environ["SIXND_BUILD"], "tests", "gpt_dump")

LOSS_TOL = 1e-5
LOGITS_TOL = 1e-5
GRAD_TOL = 1e-4
TRAIN_LOSS_TOL = 1e-4
PARAM_TOL = 1e-4

BASE = dict(n_layer=2, n_head=4, n_embd=32, vocab_size=97, padded_vocab_size=128, max_seq_len=32)
LLAMA = dict(pos="rope", norm="rmsnorm", mlp="swiglu", n_kv_head=2, tie_embeddings=False, bias=False)
SPEEDRUN = dict(pos="rope", norm="rmsnorm", mlp="relu2", qk_norm=True, tie_embeddings=False, bias=False)
CASES = [
    ("gpt2", {}),
    ("rope", dict(pos="rope")),
    ("rope_theta500", dict(pos="rope", rope_theta=500.0)),
    ("rmsnorm", dict(norm="rmsnorm")),
    ("swiglu", dict(mlp="swiglu")),
    ("relu2", dict(mlp="relu2")),
    ("mlp_hidden", dict(mlp_hidden=48)),
    ("qk_norm", dict(qk_norm=True)),
    ("gqa", dict(n_kv_head=2)),
    ("mqa", dict(n_kv_head=1)),
    ("untied", dict(tie_embeddings=False)),
    ("no_bias", dict(bias=False)),
    ("llama", LLAMA),
    ("speedrun", SPEEDRUN),
]


# ---- the reference model: a dict of float64 tensors named as sixnd names them ----

def norm(m, x, w, b):
    if m.get("norm", "layernorm") == "rmsnorm":
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-5) * w
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def rope(m, x):  # x [B, T, heads, hs]
    T, hs = x.shape[1], x.shape[3]
    half = hs // 2
    i = torch.arange(half, dtype=torch.float64)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * m.get("rope_theta", 10000.0) ** (-2.0 * i / hs)
    cos, sin = torch.cos(ang)[None, :, None, :], torch.sin(ang)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def forward(m, P, idx, tgt):
    B, T = idx.shape
    C, NH = m["n_embd"], m["n_head"]
    hs = C // NH
    nkv = m.get("n_kv_head", 0) or NH
    H = sixnd_files.mlp_hidden(m)
    get = lambda n: P.get(n)  # noqa: E731  absent tensors (no bias) are None
    x = P["wte"][idx]
    if m.get("pos", "learned") == "learned":
        x = x + P["wpe"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(m["n_layer"]):
        p = f"h.{l}."
        h = norm(m, x, P[p + "ln_1.weight"], get(p + "ln_1.bias"))
        qkv = F.linear(h, P[p + "attn.c_attn.weight"], get(p + "attn.c_attn.bias"))
        q = qkv[..., :C].view(B, T, NH, hs)
        k = qkv[..., C:C + nkv * hs].view(B, T, nkv, hs)
        v = qkv[..., C + nkv * hs:].view(B, T, nkv, hs)
        if m.get("qk_norm", False):
            q = q * torch.rsqrt((q * q).mean(-1, keepdim=True) + 1e-5)
            k = k * torch.rsqrt((k * k).mean(-1, keepdim=True) + 1e-5)
        if m.get("pos", "learned") == "rope":
            q, k = rope(m, q), rope(m, k)
        k = k.repeat_interleave(NH // nkv, dim=2)  # query head j reads kv head j // (NH / nkv)
        v = v.repeat_interleave(NH // nkv, dim=2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hs)
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1) @ v
        y = a.transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, P[p + "attn.c_proj.weight"], get(p + "attn.c_proj.bias"))
        h = norm(m, x, P[p + "ln_2.weight"], get(p + "ln_2.bias"))
        f = F.linear(h, P[p + "mlp.c_fc.weight"], get(p + "mlp.c_fc.bias"))
        kind = m.get("mlp", "gelu")
        if kind == "gelu":
            f = F.gelu(f, approximate="tanh")
        elif kind == "relu2":
            f = torch.relu(f) ** 2
        else:
            f = F.silu(f[..., :H]) * f[..., H:]
        x = x + F.linear(f, P[p + "mlp.c_proj.weight"], get(p + "mlp.c_proj.bias"))
    x = norm(m, x, P["ln_f.weight"], get("ln_f.bias"))
    head = P["wte"] if m.get("tie_embeddings", True) else P["lm_head.weight"]
    V = m["vocab_size"]
    logits = x @ head[:V].T
    return logits, F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))


def random_params(m, seed):
    """Random float32-representable weights: matrices N(0, 0.1), norm weights 1 + N(0, 0.1),
    biases N(0, 0.1); the flat buffer (layout order) and the named float64 tensors."""
    tensors, spans = sixnd_files.layout(m)
    rng = np.random.default_rng(seed)
    flat = np.zeros(spans[-1][1], dtype=np.float32)
    for name, off, shape in tensors:
        n = int(np.prod(shape))
        vals = rng.normal(0, 0.1, n).astype(np.float32)
        if "ln_" in name and name.endswith("weight"):
            vals += 1
        flat[off:off + n] = vals
    return flat, named(m, flat)


def named(m, flat):
    tensors, _ = sixnd_files.layout(m)
    return {n: torch.tensor(flat[o:o + int(np.prod(s))].astype(np.float64).reshape(s), requires_grad=True)
            for n, o, s in tensors}


def parity(tmp, name, m, B=2, T=16):
    failures = []
    mpath = os.path.join(tmp, name + ".json")
    json.dump(m, open(mpath, "w"))
    flat, P = random_params(m, seed=len(name))
    ppath = os.path.join(tmp, name + ".f32")
    flat.tofile(ppath)
    g = torch.Generator().manual_seed(5)
    tok = torch.randint(0, m["vocab_size"], (B * T + 1,), generator=g, dtype=torch.int64)
    tpath = os.path.join(tmp, name + "_tok.bin")
    tok.numpy().astype(np.int32).tofile(tpath)
    logits, loss = forward(m, P, tok[:-1].view(B, T), tok[1:].view(B, T))
    loss.backward()
    ref_logits = logits.detach().reshape(B * T, -1).numpy()
    tensors, spans = sixnd_files.layout(m)
    for attention in ("naive", "flash"):
        for recompute in ("none", "selective", "full"):
            tag = f"{name} {attention} recompute={recompute}"
            out = os.path.join(tmp, f"{name}_{attention}_{recompute}")
            os.makedirs(out)
            subprocess.run([DUMP, "--config", mpath, "--params", ppath, "--tokens", tpath, "--batch", str(B),
                            "--seq-len", str(T), "--dtype", "fp32", "--attention", attention, "--recompute",
                            recompute, "--out", out], check=True)
            got = json.load(open(os.path.join(out, "loss.json")))
            e_loss = max(abs(got[k] - loss.item()) / abs(loss.item()) for k in ("loss", "eval_loss"))
            lg = np.fromfile(os.path.join(out, "logits.bin"), dtype=np.float32).reshape(B * T, -1)
            e_logits = rel(lg, ref_logits)
            gflat = np.fromfile(os.path.join(out, "grads.f32"), dtype=np.float32)
            if gflat.size != spans[-1][1]:
                failures.append(f"{tag}: {gflat.size} gradient values, the layout has {spans[-1][1]}")
                continue
            worst_name, worst = "", 0.0
            for n, o, s in tensors:
                e = rel(gflat[o:o + int(np.prod(s))].reshape(s), P[n].grad.numpy())
                if e > worst:
                    worst_name, worst = n, e
            if attention == "flash" and recompute == "none" or max(e_loss, e_logits, worst / 10) > LOSS_TOL:
                print(f"{tag}: loss {got['loss']:.7f} vs {loss.item():.7f} (rel {e_loss:.1e}), logits rel "
                      f"{e_logits:.1e}, worst grad {worst_name} rel {worst:.1e}")
            if e_loss > LOSS_TOL:
                failures.append(f"{tag}: loss rel error {e_loss:.2e} > {LOSS_TOL}")
            if e_logits > LOGITS_TOL:
                failures.append(f"{tag}: logits rel error {e_logits:.2e} > {LOGITS_TOL}")
            if worst > GRAD_TOL:
                failures.append(f"{tag}: gradient {worst_name} rel error {worst:.2e} > {GRAD_TOL}")
    return failures


def training(tmp, preset, B=2, T=16, steps=5, lr=1e-3, wd=0.1, clip=1.0, seed=21):
    g = torch.Generator().manual_seed(9)
    tok = torch.randint(0, 101, (steps * B * T + 1,), generator=g)
    spath = os.path.join(tmp, preset + "_train.bin")
    sixnd_files.write_shard(spath, tok.tolist())
    run, log = os.path.join(tmp, preset + "_run"), os.path.join(tmp, preset + ".jsonl")
    subprocess.run([SIXND, "train", "--init", "random", "--model", preset, "--seed", str(seed), "--train-data", spath,
                    "--shuffle", "off", "--device", "cpu", "--dtype", "fp32", "--batch", str(B), "--seq-len", str(T),
                    "--steps", str(steps), "--lr", str(lr), "--weight-decay", str(wd), "--grad-clip", str(clip),
                    "--schedule", "constant", "--warmup", "0", "--log", log, "--out", run, "--total-batch-tokens",
                    str(B * T), "--attention", "flash"], check=True, stdout=subprocess.DEVNULL)
    recs = [json.loads(l) for l in open(log)]
    got_losses = [r["loss"] for r in recs if r.get("type") == "step"]
    ck = os.path.join(run, "checkpoints", f"step-{steps:08d}")
    m = json.load(open(os.path.join(ck, "meta.json")))["model"]
    mpath = os.path.join(tmp, preset + "_model.json")
    json.dump(m, open(mpath, "w"))
    initdir = os.path.join(tmp, preset + "_init")
    os.makedirs(initdir)
    subprocess.run([DUMP, "--config", mpath, "--init-seed", str(seed), "--out", initdir], check=True)
    P = named(m, np.fromfile(os.path.join(initdir, "params.f32"), dtype=np.float32))
    params = list(P.values())
    opt = torch_training.adamw(params, lr, wd)
    ref_losses = []
    for s in range(steps):
        opt.zero_grad()
        chunk = tok[s * B * T:(s + 1) * B * T + 1]
        _, loss = forward(m, P, chunk[:-1].view(B, T), chunk[1:].view(B, T))
        loss.backward()
        torch_training.clip_grads(params, clip)
        opt.step()
        ref_losses.append(loss.item())
    return torch_training.compare(preset + " training", got_losses, ref_losses, steps, ck, P.__getitem__,
                                  m["vocab_size"], TRAIN_LOSS_TOL, PARAM_TOL)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, knobs in CASES:
            failures += parity(tmp, name, dict(BASE, **knobs))
        for preset in ("llama-tiny", "speedrun-tiny"):
            failures += training(tmp, preset)
    return sixnd_files.report(failures, "torch knobs parity")


if __name__ == "__main__":
    sys.exit(main())
