"""PyTorch parity: sixnd's FP32 CPU path against an independent GPT-2 in PyTorch (float64) on
the same weights and tokens — logits, loss and every parameter gradient — for two shapes (one
with n_embd not a power of two), both attention kinds and every recompute policy; and
`sixnd eval --init llmc:FILE` against PyTorch's loss to 1e-5 relative."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from torch_peer import torch  # noqa: E402  (ends the test as skipped without PyTorch)
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from sixnd_files import rel  # noqa: E402
import torch_gpt2 as ref  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
DUMP = os.path.join(os.environ["SIXND_BUILD"], "tests", "gpt_dump")

LOSS_TOL = 1e-5     # fp32 against fp64: the loss is a mean, rounding stays near 1e-7
LOGITS_TOL = 1e-5   # relative Frobenius error of the whole logits matrix
GRAD_TOL = 1e-4     # relative Frobenius error per gradient tensor (fp32 accumulation over B*T rows)

SHAPES = [
    dict(n_layer=2, n_head=4, n_embd=64, vocab_size=300, max_seq_len=32, B=2, T=16),
    dict(n_layer=3, n_head=3, n_embd=96, vocab_size=257, max_seq_len=48, B=3, T=37),
]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for si, shape in enumerate(SHAPES):
            B, T = shape.pop("B"), shape.pop("T")
            cfg = ref.Config(**shape)
            model = ref.GPT2(cfg, dtype=torch.float64, sdpa=False)
            model.init_gpt2(seed=100 + si)
            tensors = {n: model.p(n).detach().float().double() for n, _ in ref.tensor_shapes(cfg)}
            ref.load_into(model, tensors)  # exactly the fp32-representable weights sixnd reads
            mpath = os.path.join(tmp, f"model{si}.bin")
            ref.write_llmc(mpath, cfg, tensors, version=3)
            g = torch.Generator().manual_seed(7 + si)
            tok = torch.randint(0, cfg.vocab_size, (B * T + 1,), generator=g, dtype=torch.int64)
            tpath = os.path.join(tmp, f"tokens{si}.bin")
            tok.numpy().astype(np.int32).tofile(tpath)
            spath = os.path.join(tmp, f"shard{si}.bin")
            sixnd_files.write_shard(spath, tok.tolist())

            idx, tgt = tok[:-1].view(B, T), tok[1:].view(B, T)
            model.zero_grad()
            logits, loss = model(idx, tgt)
            loss.backward()
            ref_logits = logits.detach().reshape(B * T, cfg.vocab_size).numpy()
            ref_grads = {n: (model.p(n).grad.numpy() if model.p(n).grad is not None else np.zeros(model.p(n).shape))
                         for n, _ in ref.tensor_shapes(cfg)}

            for attention in ("naive", "flash"):
                for recompute in ("none", "selective", "full"):
                    tag = f"shape{si} C={cfg.n_embd} {attention} recompute={recompute}"
                    out = os.path.join(tmp, f"out{si}_{attention}_{recompute}")
                    os.makedirs(out)
                    subprocess.run([DUMP, "--model", mpath, "--tokens", tpath, "--batch", str(B), "--seq-len", str(T),
                                    "--dtype", "fp32", "--attention", attention, "--recompute", recompute,
                                    "--out", out], check=True)
                    got = json.load(open(os.path.join(out, "loss.json")))
                    e_loss = abs(got["loss"] - loss.item()) / abs(loss.item())
                    e_eval = abs(got["eval_loss"] - loss.item()) / abs(loss.item())
                    lg = np.fromfile(os.path.join(out, "logits.bin"), dtype=np.float32).reshape(B * T, cfg.vocab_size)
                    e_logits = rel(lg, ref_logits)
                    _, grads = ref.read_llmc(os.path.join(out, "grads.bin"))
                    worst_name, worst = max(((n, rel(grads[n].numpy(), ref_grads[n])) for n in ref_grads),
                                            key=lambda kv: kv[1])
                    print(f"{tag}: loss {got['loss']:.7f} vs {loss.item():.7f} (rel {e_loss:.1e}), logits rel "
                          f"{e_logits:.1e}, worst grad {worst_name} rel {worst:.1e}")
                    if e_loss > LOSS_TOL or e_eval > LOSS_TOL:
                        failures.append(f"{tag}: loss rel error {max(e_loss, e_eval):.2e} > {LOSS_TOL}")
                    if e_logits > LOGITS_TOL:
                        failures.append(f"{tag}: logits rel error {e_logits:.2e} > {LOGITS_TOL}")
                    if worst > GRAD_TOL:
                        failures.append(f"{tag}: gradient {worst_name} rel error {worst:.2e} > {GRAD_TOL}")

                r = subprocess.run([SIXND, "eval", "--init", "llmc:" + mpath, "--data", spath, "--batch", str(B),
                                    "--seq-len", str(T), "--device", "cpu", "--dtype", "fp32", "--attention",
                                    attention], check=True, capture_output=True, text=True)
                ev = json.loads(r.stdout.strip().splitlines()[-1])
                e = abs(ev["loss"] - loss.item()) / abs(loss.item())
                print(f"shape{si} sixnd eval ({attention}): {ev['loss']:.7f} vs PyTorch {loss.item():.7f} (rel {e:.1e})")
                if e > LOSS_TOL or ev["tokens"] != B * T:
                    failures.append(f"shape{si} eval {attention}: rel error {e:.2e}, tokens {ev['tokens']}")
    return sixnd_files.report(failures, "torch parity")


if __name__ == "__main__":
    sys.exit(main())
