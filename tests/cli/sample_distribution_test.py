"""What `sixnd sample` draws, judged against a PyTorch GPT-2 (bench/torch_gpt2.py) on the same
llm.c weights, random and large enough that the next-token distributions are far from flat:
- greedy (--temperature 0) from a one-token prompt to the end of the context is PyTorch's argmax
  of a full forward over the sequence so far, at every position (the KV cache against the whole
  sequence; the last token is predicted from a full context);
- the first token of many samples follows softmax(logits / T), over the k largest with --top-k,
  then over the most likely tokens whose probabilities first reach p with --top-p (a chi-square
  test, and never a token outside them);
- --seed repeats a sample; the samples of --seed 7 and --seed 8 are not shifted copies of each
  other (sample s + 1 of one seed was sample s of the next);
- weights whose activations overflow (NaN logits) stop the sample with one error, as eval
  stops on a non-finite loss, instead of drawing one arbitrary id at every step."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from torch_peer import torch  # noqa: E402  (ends the test as skipped without PyTorch)
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
import torch_gpt2  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", ASAN_OPTIONS="detect_leaks=0")
CFG = torch_gpt2.Config(n_layer=2, n_head=4, n_embd=32, vocab_size=60, max_seq_len=24)
PROMPT = [3, 41, 17]
N = 3000  # samples of the first token per setting


def sample(model, *args):
    r = subprocess.run([SIXND, "sample", "--init", "llmc:" + model, "--dtype", "fp32", "--device", "cpu",
                        *map(str, args)], capture_output=True, text=True, env=ENV)
    return r, [json.loads(line) for line in r.stdout.splitlines() if line.startswith("[")]


def logits(net, ids):
    with torch.no_grad():
        return net(torch.tensor([ids]))[0][0].numpy()


def chi_square_p(counts, p):
    """Pearson's test (the cells expecting under 5 draws pooled into one), its tail by
    Wilson-Hilferty's normal approximation."""
    e = p * counts.sum()
    big = e >= 5
    obs, exp = list(counts[big]), list(e[big])
    if not big.all():
        obs.append(counts[~big].sum())
        exp.append(e[~big].sum())
    chi = sum((o - x) ** 2 / x for o, x in zip(obs, exp))
    dof = len(obs) - 1
    z = ((chi / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def main():
    tmp = tempfile.mkdtemp(prefix="sixnd_sample_dist_")
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    failures = []
    rng = np.random.default_rng(5)
    tensors = {}
    for name, shape in torch_gpt2.tensor_shapes(CFG):
        v = rng.normal(0, 0.3, shape)
        if "ln_" in name and name.endswith("weight"):
            v = 1 + 0.1 * v
        tensors[name] = torch.tensor(v.astype(np.float32).astype(np.float64))
    model = os.path.join(tmp, "model.bin")
    torch_gpt2.write_llmc(model, CFG, tensors)
    net = torch_gpt2.GPT2(CFG, dtype=torch.float64, sdpa=False)
    torch_gpt2.load_into(net, tensors)

    # Greedy to the end of the context; a near-tie (FP32 rounding could go either way) is skipped.
    r, out = sample(model, "--prompt-ids", 7, "--temperature", 0)
    if r.returncode != 0 or len(out) != 1 or len(out[0]) != CFG.max_seq_len:
        failures.append(f"greedy: exit {r.returncode}, {out}, expected {CFG.max_seq_len} tokens: {r.stderr[-300:]}")
    else:
        seq = [7] + out[0]
        z = logits(net, seq[:CFG.max_seq_len])
        for t, tok in enumerate(out[0]):
            best = int(np.argmax(z[t]))
            if tok != best and z[t][best] - z[t][tok] > 1e-4:
                failures.append(f"greedy: position {t} drew {tok}, PyTorch's argmax is {best} "
                                f"(logits {z[t][tok]:.6f} < {z[t][best]:.6f})")
                break

    z = logits(net, PROMPT)[-1]
    for temperature, k, top_p in [(1.0, 0, 1), (0.6, 0, 1), (1.0, 5, 1), (1.0, 0, 0.8), (0.7, 10, 0.9)]:
        r, out = sample(model, "--prompt-ids", ",".join(map(str, PROMPT)), "--max-tokens", 1, "--samples", N,
                        "--temperature", temperature, "--top-k", k, "--top-p", top_p, "--seed", 11)
        what = f"T={temperature} top-k={k} top-p={top_p}"
        if r.returncode != 0 or len(out) != N:
            failures.append(f"{what}: exit {r.returncode}, {len(out)} samples: {r.stderr[-300:]}")
            continue
        s = z / temperature
        if k:
            s = np.where(np.isin(np.arange(len(z)), np.argsort(-z, kind="stable")[:k]), s, -np.inf)
        p = np.exp(s - s.max())
        p /= p.sum()
        if top_p < 1:
            order = np.argsort(-s, kind="stable")
            before = np.cumsum(p[order]) - p[order]  # the mass of the more likely tokens
            p[order[before >= top_p]] = 0
            p /= p.sum()
        counts = np.bincount([o[0] for o in out], minlength=len(p)).astype(np.float64)
        outside = int(counts[p == 0].sum())
        pv = chi_square_p(counts[p > 0], p[p > 0])
        if outside or pv < 1e-4:
            failures.append(f"{what}: {outside} draws outside the support, chi-square p = {pv:.2g}")

    # Seeds: a sample repeats; nearby seeds share no sample.
    prompt = ["--prompt-ids", "1,2", "--max-tokens", 10]
    _, a = sample(model, *prompt, "--seed", 7, "--samples", 3)
    _, again = sample(model, *prompt, "--seed", 7)
    _, b = sample(model, *prompt, "--seed", 8, "--samples", 3)
    if not a or not again or a[0] != again[0]:
        failures.append(f"--seed 7 does not repeat its first sample: {a[:1]} then {again}")
    shared = [s for s in b if s in a]
    if len(a) != 3 or len(b) != 3 or shared:
        failures.append(f"--seed 7 and --seed 8 share samples {shared}")

    # Activations that overflow: the weights are finite, the logits NaN.
    huge = {n: t * 1e30 if n.endswith("c_fc.weight") or n.endswith("mlp.c_proj.weight") else t for n, t in tensors.items()}
    overflow = os.path.join(tmp, "overflow.bin")
    torch_gpt2.write_llmc(overflow, CFG, huge)
    for extra in (["--temperature", 0], ["--top-k", 3]):
        r, out = sample(overflow, "--prompt-ids", "1,2", "--max-tokens", 4, *extra)
        said = [line for line in r.stderr.splitlines() if "error" in line]
        if r.returncode != 1 or out or len(said) != 1 or "not finite" not in said[0]:
            failures.append(f"overflowing activations {extra}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}")
    return sixnd_files.report(failures, "sixnd sample against PyTorch")


if __name__ == "__main__":
    sys.exit(main())
