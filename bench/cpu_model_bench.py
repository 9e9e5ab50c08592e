"""CPU model benchmark, sixnd beside PyTorch in one run on the same machine and shapes:
forward+backward and full training-step (AdamW) tokens/s for GPT-2 124M (B=4, T=64) and a small
shape (4 layers, 256 channels, 4 heads, vocab 4096, B=8, T=256), FP32 and BF16; then the
activation memory and step time of each recompute policy for GPT-2 124M at B=4, T=256.
Prints markdown tables. Usage: python3 bench/cpu_model_bench.py BUILD_DIR [--quick]"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX")  # Debian's OpenBLAS/PyTorch pick a slow kernel otherwise


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    quick = "--quick" in sys.argv
    bench = os.path.join(build, "bench", "model_bench")
    iters = ["--warmup", "1", "--iters", "2" if quick else "4"]
    shapes = [("gpt2-124m", 4, 64), ("small", 8, 256)]
    print("| shape | B×T | dtype | mode | sixnd tok/s | PyTorch tok/s | ratio | sixnd MFU |")
    print("|---|---|---|---|---|---|---|---|")
    for shape, B, T in shapes:
        for dtype in ("fp32", "bf16"):
            for mode in ("fwdbwd", "train"):
                common = ["--shape", shape, "--dtype", dtype, "--mode", mode, "--batch", str(B), "--seq-len", str(T)]
                s = run([bench, "--device", "cpu"] + common + iters)
                t = run(["/usr/bin/python3", os.path.join(HERE, "torch_gpt2.py"), "--device", "cpu"] + common + iters)
                print(f"| {shape} | {B}×{T} | {dtype} | {mode} | {s['tokens_per_s']:.0f} | {t['tokens_per_s']:.0f} | "
                      f"{s['tokens_per_s'] / t['tokens_per_s']:.2f}× | {100 * s['mfu']:.1f}% |", flush=True)
    print()
    print("| recompute (gpt2-124m, B=4, T=256, bf16, train step) | activation MiB | workspace MiB | step ms | MFU | HFU |")
    print("|---|---|---|---|---|---|")
    for rc in ("none", "selective", "full"):
        s = run([bench, "--device", "cpu", "--shape", "gpt2-124m", "--dtype", "bf16", "--mode", "train", "--batch", "4",
                 "--seq-len", "256", "--recompute", rc] + iters)
        print(f"| {rc} | {s['activation_bytes'] / 2**20:.0f} | {s['workspace_bytes'] / 2**20:.0f} | {s['step_ms']:.0f} | "
              f"{100 * s['mfu']:.1f}% | {100 * s['hfu']:.1f}% |", flush=True)
    print(f"\nmachine: {s['device_name']}, {os.cpu_count()} cores; peak for MFU: {s['peak_source']}")


if __name__ == "__main__":
    main()
