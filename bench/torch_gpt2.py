"""GPT-2 in PyTorch, in llm.c's tensor layout: the independent oracle for sixnd's parity tests
and the peer its benchmarks are measured against.

As a module: GPT2, read_llmc / write_llmc (llm.c model files, version 3 fp32 / 5 bf16).
As a script: the benchmark peer (see --help)."""
import argparse
import json
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

LLMC_MAGIC = 20240326
BLOCK_KINDS = ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
               "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
               "mlp.c_proj.weight", "mlp.c_proj.bias"]


def pad_vocab(v):
    return (v + 127) // 128 * 128


class Config:
    def __init__(self, n_layer, n_head, n_embd, vocab_size, max_seq_len, padded_vocab_size=None):
        self.n_layer, self.n_head, self.n_embd = n_layer, n_head, n_embd
        self.vocab_size, self.max_seq_len = vocab_size, max_seq_len
        self.padded_vocab_size = padded_vocab_size or pad_vocab(vocab_size)


def tensor_shapes(cfg):
    """(name, shape) in llm.c file order."""
    C, L = cfg.n_embd, cfg.n_layer
    block = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (3 * C, C), "attn.c_attn.bias": (3 * C,),
             "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,), "ln_2.weight": (C,), "ln_2.bias": (C,),
             "mlp.c_fc.weight": (4 * C, C), "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (C, 4 * C),
             "mlp.c_proj.bias": (C,)}
    out = [("wte", (cfg.padded_vocab_size, C)), ("wpe", (cfg.max_seq_len, C))]
    for kind in BLOCK_KINDS:
        for l in range(L):
            out.append((f"h.{l}.{kind}", block[kind]))
    out += [("ln_f.weight", (C,)), ("ln_f.bias", (C,))]
    return out


class GPT2(torch.nn.Module):
    def __init__(self, cfg, dtype=torch.float32, sdpa=None):
        super().__init__()
        self.cfg = cfg
        self.sdpa = hasattr(F, "scaled_dot_product_attention") if sdpa is None else sdpa
        self.params = torch.nn.ParameterDict()
        for name, shape in tensor_shapes(cfg):
            self.params[name.replace(".", "__")] = torch.nn.Parameter(torch.zeros(shape, dtype=dtype))

    def p(self, name):
        return self.params[name.replace(".", "__")]

    def init_gpt2(self, seed):
        """GPT-2 init, with layernorm gains and biases perturbed so that their gradients are not trivial."""
        g = torch.Generator().manual_seed(seed)
        cfg = self.cfg
        with torch.no_grad():
            for name, shape in tensor_shapes(cfg):
                t = self.p(name)
                if name.endswith(".weight") and ("ln_" in name):
                    t.copy_(1.0 + 0.1 * torch.randn(shape, generator=g, dtype=t.dtype))
                elif len(shape) == 1:
                    t.copy_(0.02 * torch.randn(shape, generator=g, dtype=t.dtype))
                else:
                    std = 0.02 / math.sqrt(2 * cfg.n_layer) if name.endswith("c_proj.weight") else 0.02
                    t.copy_(std * torch.randn(shape, generator=g, dtype=t.dtype))
            self.p("wte")[cfg.vocab_size:].zero_()

    def forward(self, idx, targets=None):
        cfg = self.cfg
        B, T = idx.shape
        C, NH = cfg.n_embd, cfg.n_head
        x = self.p("wte")[idx] + self.p("wpe")[:T]
        for l in range(cfg.n_layer):
            h = f"h.{l}."
            y = F.layer_norm(x, (C,), self.p(h + "ln_1.weight"), self.p(h + "ln_1.bias"), 1e-5)
            qkv = F.linear(y, self.p(h + "attn.c_attn.weight"), self.p(h + "attn.c_attn.bias"))
            q, k, v = qkv.split(C, dim=2)
            q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
            if self.sdpa:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
                mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()
                att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
                a = att @ v
            a = a.transpose(1, 2).contiguous().view(B, T, C)
            x = x + F.linear(a, self.p(h + "attn.c_proj.weight"), self.p(h + "attn.c_proj.bias"))
            y = F.layer_norm(x, (C,), self.p(h + "ln_2.weight"), self.p(h + "ln_2.bias"), 1e-5)
            y = F.gelu(F.linear(y, self.p(h + "mlp.c_fc.weight"), self.p(h + "mlp.c_fc.bias")), approximate="tanh")
            x = x + F.linear(y, self.p(h + "mlp.c_proj.weight"), self.p(h + "mlp.c_proj.bias"))
        x = F.layer_norm(x, (C,), self.p("ln_f.weight"), self.p("ln_f.bias"), 1e-5)
        logits = x @ self.p("wte")[: cfg.vocab_size].t()
        if targets is None:
            return logits, None
        flat = logits.reshape(-1, cfg.vocab_size)
        if flat.dtype in (torch.float16, torch.bfloat16):
            flat = flat.float()
        loss = F.cross_entropy(flat, targets.reshape(-1))
        return logits, loss


def read_llmc(path, dtype=torch.float64):
    """(Config, {name: tensor}) from an llm.c model file."""
    with open(path, "rb") as f:
        h = struct.unpack("256i", f.read(1024))
        if h[0] != LLMC_MAGIC or h[1] not in (3, 5):
            raise ValueError(f"{path}: not an llm.c model file")
        cfg = Config(h[4], h[5], h[6], h[3], h[2], h[7])
        raw = f.read()
    if h[1] == 3:
        flat = np.frombuffer(raw, dtype=np.float32).astype(np.float64)
    else:
        flat = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    out, off = {}, 0
    for name, shape in tensor_shapes(cfg):
        n = int(np.prod(shape))
        out[name] = torch.tensor(flat[off:off + n].reshape(shape), dtype=dtype)
        off += n
    if off != flat.size:
        raise ValueError(f"{path}: size does not match its header")
    return cfg, out


def write_llmc(path, cfg, tensors, version=3):
    h = [0] * 256
    h[:8] = [LLMC_MAGIC, version, cfg.max_seq_len, cfg.vocab_size, cfg.n_layer, cfg.n_head, cfg.n_embd,
             cfg.padded_vocab_size]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        for name, _ in tensor_shapes(cfg):
            a = tensors[name].detach().cpu().double().numpy().astype(np.float32)
            if version == 5:
                u = a.view(np.uint32)
                a = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            f.write(a.tobytes())


def load_into(model, tensors):
    with torch.no_grad():
        for name, t in tensors.items():
            model.p(name).copy_(t.to(model.p(name).dtype))


# ---- benchmark peer ----------------------------------------------------------------------------

SHAPES = {
    "gpt2-124m": dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, max_seq_len=1024),
    "small": dict(n_layer=4, n_head=4, n_embd=256, vocab_size=4096, max_seq_len=1024),
    "demo": dict(n_layer=6, n_head=6, n_embd=384, vocab_size=4096, max_seq_len=256),  # scripts/run.sh's d6
}


def flops_per_token(cfg, T):
    """Model FLOPs per token, as sixnd counts them (model/flops.cpp): 6 N + 12 L C T, N the parameters
    that take part in matrix multiplies (all but the position embeddings; the tied wte once)."""
    C, L = cfg.n_embd, cfg.n_layer
    n = cfg.vocab_size * C + L * (12 * C * C + 13 * C) + 2 * C
    return 6.0 * n + 12.0 * L * C * T


def openblas():
    """The OpenBLAS loaded in this process (ctypes), or None when PyTorch does not use OpenBLAS."""
    import ctypes
    with open("/proc/self/maps") as f:
        libs = sorted({l.split()[-1] for l in f if "openblas" in l and ".so" in l})
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
        except (OSError, AttributeError):
            continue
        return lib
    return None


def openblas_core():
    """The kernel family OpenBLAS picked in this process ("" when PyTorch does not use OpenBLAS)."""
    lib = openblas()
    return lib.openblas_get_corename().decode() if lib else ""


def bench(args):
    torch.manual_seed(0)
    blas = openblas()
    if args.threads:
        torch.set_num_threads(args.threads)
        # OpenBLAS (PyTorch's FP32 matmuls on Debian) keeps a thread pool of its own, sized when it
        # loaded by OPENBLAS_NUM_THREADS before OMP_NUM_THREADS.
        if blas:
            blas.openblas_set_num_threads(args.threads)
    if args.cpu_isa == "avx2":
        # PyTorch 1.13 picks oneDNN's bf16 matmul from the CPU's AVX-512 flags directly (not from
        # ATEN_CPU_CAPABILITY), so under ONEDNN_MAX_CPU_ISA=AVX2 it would fail; an AVX2-only CPU
        # fails that check and runs PyTorch's own bf16 GEMM, which this makes it run here too.
        torch.backends.mkldnn.enabled = False
    dev = torch.device(args.device)
    cfg = Config(**SHAPES[args.shape])
    model = GPT2(cfg, dtype=torch.float32).to(dev)
    model.init_gpt2(0)
    amp = args.dtype == "bf16"
    if amp and dev.type == "cpu":
        # Debian's CPU PyTorch autocasts linear layers to bf16 (oneDNN, AMX where present).
        ctx = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    elif amp:
        ctx = lambda: torch.autocast("cuda", dtype=torch.bfloat16)
    else:
        import contextlib
        ctx = contextlib.nullcontext
    opt = None
    if args.mode == "train":
        kw = {"fused": True} if dev.type == "cuda" else {}
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0, **kw)
    x = torch.randint(0, cfg.vocab_size, (args.batch, args.seq_len + 1), device=dev)
    inp, tgt = x[:, :-1], x[:, 1:]
    fpt = flops_per_token(cfg, args.seq_len)

    variants = ["eager", "compile"] if args.also_compile else ["compile" if args.compile else "eager"]
    for variant in variants:
        # Eager first: its line is printed before torch.compile spends its compile time.
        fwd = torch.compile(model) if variant == "compile" else model

        def step():
            with ctx():
                _, loss = fwd(inp, tgt)
            loss.backward()
            if opt is not None:
                # A training step as sixnd's (model_bench --mode train, and sixnd train's default
                # --grad-clip 1): the global gradient norm, and the update scaled by the clip.
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
            model.zero_grad(set_to_none=True)
            return loss

        t_start = time.perf_counter()
        for _ in range(args.warmup):
            step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        warmup_s = time.perf_counter() - t_start
        t0 = time.perf_counter()
        for _ in range(args.iters):
            step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / args.iters
        toks = args.batch * args.seq_len / dt
        out = {"peer": "pytorch", "variant": variant, "torch": torch.__version__, "device": args.device,
               "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
               "shape": args.shape, "dtype": args.dtype, "mode": args.mode, "batch": args.batch,
               "seq_len": args.seq_len, "step_ms": dt * 1e3, "tokens_per_s": toks, "flops_per_token": fpt,
               "warmup_s": warmup_s, "threads": torch.get_num_threads(),
               "openblas_core": openblas_core() if dev.type == "cpu" else "",
               "openblas_threads": blas.openblas_get_num_threads() if blas else 0,
               "mkldnn": torch.backends.mkldnn.enabled}
        if args.peak_tflops > 0:
            out["peak_tflops"] = args.peak_tflops
            out["mfu"] = fpt * toks / (args.peak_tflops * 1e12)
        print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description="PyTorch GPT-2 benchmark peer")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--mode", choices=["fwdbwd", "train"], default="fwdbwd",
                    help="forward+backward, or a training step: that, the gradient clipped to norm 1, AdamW")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--compile", action="store_true", help="time the torch.compile'd model only")
    ap.add_argument("--also-compile", action="store_true",
                    help="time eager, then torch.compile, in one process: one JSON line each")
    ap.add_argument("--peak-tflops", type=float, default=0.0,
                    help="peak FLOP/s (dense, this dtype) to report MFU against; sixnd's table value on a GPU")
    ap.add_argument("--cpu-isa", choices=["native", "avx2"], default="native",
                    help="avx2: run what PyTorch runs on an AVX2-only CPU (with ATEN_CPU_CAPABILITY=avx2 and "
                         "ONEDNN_MAX_CPU_ISA=AVX2 in the environment)")
    args = ap.parse_args()
    # Checked before the model is built: --iters 0 would divide by zero, a negative count would
    # report negative tokens/s, a --seq-len past the shape's context fails deep in the forward.
    for flag, value, least in (("--iters", args.iters, 1), ("--warmup", args.warmup, 0), ("--batch", args.batch, 1),
                               ("--seq-len", args.seq_len, 1), ("--threads", args.threads, 0),
                               ("--peak-tflops", args.peak_tflops, 0)):
        if not value >= least:
            ap.error(f"{flag} {value}: must be at least {least}")
    if args.seq_len > SHAPES[args.shape]["max_seq_len"]:
        ap.error(f"--seq-len {args.seq_len}: the {args.shape} shape's context is {SHAPES[args.shape]['max_seq_len']}")
    if args.compile and args.also_compile:
        ap.error("--compile and --also-compile: give one")
    # Each was a traceback from deep in the model: a device string PyTorch does not know, CUDA on a
    # PyTorch without it (Debian's 1.13 here), torch.compile before PyTorch 2.
    try:
        dev = torch.device(args.device)
    except RuntimeError:
        ap.error(f"--device {args.device}: expected cpu or cuda")
    if dev.type not in ("cpu", "cuda"):
        ap.error(f"--device {args.device}: expected cpu or cuda")
    cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if dev.type == "cuda" and (dev.index or 0) >= cuda_devices:
        ap.error(f"--device {args.device}: PyTorch {torch.__version__} sees {cuda_devices} CUDA device(s)")
    if (args.compile or args.also_compile) and not hasattr(torch, "compile"):
        ap.error(f"--{'also-' if args.also_compile else ''}compile: PyTorch {torch.__version__} has no torch.compile "
                 "(2.0 or later)")
    bench(args)


if __name__ == "__main__":
    sys.exit(main())
