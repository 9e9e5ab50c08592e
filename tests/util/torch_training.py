"""The PyTorch side of the training-parity tests: sixnd's AdamW (betas 0.9/0.95, eps 1e-8, weight
decay on matrices only), its --grad-clip (by the global norm), and the comparison of a sixnd run's
per-step losses and final checkpoint with the reference trained alongside."""
from torch_peer import torch
import sixnd_files


def adamw(params, lr, wd):
    params = list(params)
    return torch.optim.AdamW([{"params": [p for p in params if p.dim() >= 2], "weight_decay": wd},
                              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8)


def clip_grads(params, clip):
    """Scales every gradient by clip / norm where the global L2 norm is above clip (0: off).
    Returns the norm before clipping and the scale applied: a step record's grad_norm and clip_scale."""
    params = list(params)
    norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
    scale = clip / norm if 0 < clip < norm else 1.0
    if scale != 1.0:
        for p in params:
            p.grad.mul_(scale)
    return float(norm), float(scale)


def compare(name, got_losses, ref_losses, steps, ckpt_dir, reference, vocab, loss_tol, param_tol,
            determined_only=False):
    """Failures where sixnd's per-step losses (relative error) or the parameters of its checkpoint
    at ckpt_dir (relative Frobenius error, padded vocabulary rows left out) differ from the
    reference's; reference(name) is the reference's tensor. determined_only leaves out the key
    bias (sixnd_files.determined). Prints both loss lists and the worst parameter."""
    failures = []
    if len(got_losses) != steps:
        failures.append(f"{name}: {len(got_losses)} step records, expected {steps}")
    for i, (a, b) in enumerate(zip(got_losses, ref_losses)):
        e = abs(a - b) / abs(b)
        if e > loss_tol:
            failures.append(f"{name}: step {i + 1} loss {a} vs {b} (rel {e:.2e})")
    got = sixnd_files.checkpoint_params(ckpt_dir)
    ref = {n: reference(n).detach().numpy() for n in got}
    if determined_only:
        got, ref = sixnd_files.determined(got), sixnd_files.determined(ref)
    worst, worst_name = 0.0, ""
    for n, a in got.items():
        b = ref[n]
        if n in ("wte", "lm_head.weight"):
            a, b = a[:vocab], b[:vocab]
        e = sixnd_files.rel(a, b)
        if e > worst:
            worst, worst_name = e, n
    if worst > param_tol:
        failures.append(f"{name}: parameter {worst_name} rel error {worst:.2e} after {steps} steps")
    print(f"{name}: losses sixnd {['%.6f' % x for x in got_losses]}")
    print(f"{name}: losses torch {['%.6f' % x for x in ref_losses]}; worst param {worst_name} {worst:.1e}")
    return failures
