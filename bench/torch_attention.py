#!/usr/bin/env python3
"""PyTorch's flash SDPA on the shapes of bench/attention (causal, bf16, head sizes 64 and 128,
T from 1k to 8k at 16k tokens per batch and width 2048), printing the same table: forward and
forward+backward time and TFLOP/s (forward 4*B*NH*T^2*hs/2, backward 2.5x forward). Median of
five timed repeats after a warm-up, timed with CUDA events. --seq-lens 1024,4096 picks the T
values (default 1k, 2k, 4k, 8k)."""
import argparse
import statistics
import sys

import torch
import torch.nn.functional as F


def time_ms(fn, iters):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / iters)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description="PyTorch flash SDPA peer of bench/attention")
    ap.add_argument("--seq-lens", default="1024,2048,4096,8192", help="comma-separated T values dividing 16384")
    args = ap.parse_args()
    try:
        Ts = [int(t) for t in args.seq_lens.split(",")]
    except ValueError:
        Ts = [0]
    if any(t < 64 or 16384 % t for t in Ts):
        ap.error(f"--seq-lens {args.seq_lens}: each T must divide 16384 and be at least 64")
    if not torch.cuda.is_available():
        print("torch_attention: skipped, no CUDA device")
        return 0
    print(f"# torch {torch.__version__} SDPA flash, {torch.cuda.get_device_name(0)}")
    print("| impl | hs | T | B | NH | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for hs in (64, 128):
        for T in Ts:
            B, NH = 16384 // T, 2048 // hs
            q, k, v = (torch.randn(B, NH, T, hs, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            dout = torch.randn(B, NH, T, hs, device="cuda", dtype=torch.bfloat16)
            flops = 4.0 * B * NH * T * T * hs / 2.0
            iters = 5 if T >= 4096 else 10
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=True)

                def both():
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    torch.autograd.grad(out, (q, k, v), dout)

                f_ms = time_ms(fwd, iters)
                fb_ms = time_ms(both, iters)
            print(f"| torch SDPA flash | {hs} | {T} | {B} | {NH} | {f_ms:.3f} | {flops / f_ms / 1e9:.1f} | "
                  f"{fb_ms:.3f} | {3.5 * flops / fb_ms / 1e9:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
