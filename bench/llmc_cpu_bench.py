"""sixnd beside llm.c's CPU reference (train_gpt2.c) in one run on the same machine and thread
count: training-step tokens/s of GPT-2 124M at llm.c's own shape (B=4, T=64), llm.c in FP32
(all it has), sixnd in FP32 and BF16. DESIGN.md's CPU target is sixnd at 5x llm.c or more.

  python3 bench/llmc_cpu_bench.py BUILD_DIR --llmc LLMC_DIR [--isa native|avx2] [--steps N]
                                            [--repeat N]

LLMC_DIR is a checkout of github.com/karpathy/llm.c; nothing in it is written: its train_gpt2.c,
Makefile and llmc/ are copied to a temporary directory and built there by its own Makefile
(`make train_gpt2`: -Ofast, OpenMP, -march=native; with --isa avx2, -march=x86-64-v3 instead,
the code an AVX2-only CPU runs, and sixnd with SIXND_CPU_ISA=avx2 as in cpu_model_bench.py).
train_gpt2 reads gpt2_124M.bin and token files from its working directory: this script writes
there a GPT-2 124M initialisation (bench/torch_gpt2.py's) and random tokens in llm.c's shard
format. Its step time ("took N ms") covers forward, backward and the AdamW update, as sixnd's
train mode (bench/model/model_bench) does. Step 0 of each side is warm-up; llm.c is stopped once
it has printed the timed steps (its first validation pass runs before step 0 and is not timed).
Each side's tokens/s come from the mean of its timed steps.
--repeat N interleaves N rounds (llm.c first, then sixnd's FP32 and BF16 in one process) and
reports medians with the spread of the per-round ratios."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cpu_model_bench import (BenchError, cpu_info, cpu_line, envs, isa_fault, load_average, med,  # noqa: E402
                             model_bench, print_avx2_note, run_all, sixnd_sees, spread, stop_children_on_sigterm,
                             thread_count)

B, T = 4, 64
SHARD_MAGIC, SHARD_VERSION = 20240520, 1
LLMC_LAST_STEP = 40
STEP_LINE = re.compile(r"^step (\d+): train loss \S+ \(took ([0-9.]+) ms\)")


def build_llmc(src, work, isa):
    """train_gpt2 built by llm.c's Makefile in `work`, from a copy of what it needs."""
    for name in ("train_gpt2.c", "Makefile"):
        shutil.copy(os.path.join(src, name), work)
    shutil.copytree(os.path.join(src, "llmc"), os.path.join(work, "llmc"))
    cmd = ["make", "-C", work, "train_gpt2", "NO_MULTI_GPU=1", "NO_USE_MPI=1"]
    if isa == "avx2":
        cmd.append("CFLAGS_COND=-march=x86-64-v3")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError(f"building llm.c's train_gpt2: make: {e.strerror}") from None
    if r.returncode != 0:
        raise RuntimeError(f"building llm.c's train_gpt2 failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    compile_line = [l for l in r.stdout.splitlines() if "train_gpt2.c" in l and " -o " in l]
    return os.path.join(work, "train_gpt2"), compile_line[-1].strip() if compile_line else "?"


def write_inputs(work):
    """gpt2_124M.bin (version 3, FP32) and train/val token files where train_gpt2 looks. torch_gpt2
    (and with it PyTorch) is imported only here, so that --help and argument errors need neither."""
    try:
        from torch_gpt2 import GPT2, SHAPES, Config, tensor_shapes, write_llmc
    except ImportError as e:
        raise RuntimeError(f"PyTorch writes llm.c's gpt2_124M.bin and cannot be imported: {e}") from None
    cfg = Config(**SHAPES["gpt2-124m"])
    model = GPT2(cfg)
    model.init_gpt2(seed=1)
    # A full disk (half a gigabyte in the temporary directory) is one error naming the file: a
    # write's OSError carries no file name, and was a traceback.
    path = os.path.join(work, "gpt2_124M.bin")
    try:
        write_llmc(path, cfg, {n: model.p(n) for n, _ in tensor_shapes(cfg)})
        data = os.path.join(work, "dev", "data", "tinyshakespeare")
        os.makedirs(data)
        rng = np.random.default_rng(1)
        for split in ("train", "val"):
            tokens = rng.integers(0, cfg.vocab_size, size=1 << 16, dtype=np.uint16)
            header = np.zeros(256, dtype=np.int32)
            header[:3] = [SHARD_MAGIC, SHARD_VERSION, tokens.size]
            path = os.path.join(data, f"tiny_shakespeare_{split}.bin")
            with open(path, "wb") as f:
                f.write(header.tobytes())
                f.write(tokens.tobytes())
    except OSError as e:
        raise RuntimeError(f"{path}: {e.strerror} (writing llm.c's inputs)") from None


def run_llmc(exe, work, env, steps):
    """Milliseconds of llm.c's training steps 1..steps (step 0 is warm-up)."""
    # Line-buffered: train_gpt2 flushes its stdout only when it samples text (step 20).
    p = subprocess.Popen(["stdbuf", "-oL", exe], cwd=work, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    took, tail = [], []
    try:
        for line in p.stdout:
            tail = (tail + [line])[-20:]
            m = STEP_LINE.match(line)
            if m and int(m.group(1)) > 0:
                took.append(float(m.group(2)))
                if len(took) == steps:
                    break
    finally:
        p.kill()
        p.wait()
    if len(took) < steps:
        raise RuntimeError(f"llm.c's train_gpt2 stopped after {len(took)} timed steps:\n{''.join(tail)}")
    return took


def main():
    try:
        bench()
    except (BenchError, RuntimeError) as e:
        sys.exit(f"llmc_cpu_bench: {e}")


def bench():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--llmc", required=True, help="a checkout of github.com/karpathy/llm.c")
    ap.add_argument("--isa", choices=["native", "avx2"], default=os.environ.get("SIXND_CPU_ISA") or "native")
    ap.add_argument("--steps", type=int, default=4,
                    help="timed steps per side per round (after one warm-up; at most 40, all llm.c runs)")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds; cells are medians")
    args = ap.parse_args()
    # A stopped benchmark still removes its half-gigabyte model file (the `with` below unwinds).
    stop_children_on_sigterm()
    # train_gpt2 runs steps 0..LLMC_LAST_STEP: more timed steps would fail only once it ends.
    if not 1 <= args.steps <= LLMC_LAST_STEP or args.repeat < 1:
        sys.exit(f"llmc_cpu_bench: --steps must be 1 to {LLMC_LAST_STEP} and --repeat at least 1, "
                 f"got {args.steps} and {args.repeat}")
    model, flags = cpu_info()
    if isa_fault(args.isa, flags):
        sys.exit(f"llmc_cpu_bench: {isa_fault(args.isa, flags)}")
    for need in ("train_gpt2.c", "Makefile", "llmc"):
        if not os.path.exists(os.path.join(args.llmc, need)):
            sys.exit(f"llmc_cpu_bench: {args.llmc}: no {need} here (--llmc takes a checkout of karpathy/llm.c)")
    # Its own line, as the faults above (it was the one without "llmc_cpu_bench:").
    bench = model_bench(args.build)
    threads = thread_count()
    env_s, _ = envs(args.isa, flags, threads)
    env_l = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env_l.pop("SIXND_CPU_ISA", None)

    with tempfile.TemporaryDirectory(prefix="llmc-bench-") as work:
        exe, compile_line = build_llmc(args.llmc, work, args.isa)
        print(cpu_line(model, flags))
        print(f"path: --isa {args.isa}; threads: {threads} on both sides (OMP_NUM_THREADS)")
        print(f"llm.c: {compile_line}")
        print("writing gpt2_124M.bin (GPT-2 124M init, FP32) and token files ...", flush=True)
        write_inputs(work)
        print(f"load average before: {load_average()}", flush=True)
        rounds = []
        for i in range(args.repeat):
            # Mean step time, as model_bench's tokens/s (and torch_gpt2's) are taken.
            took = run_llmc(exe, work, env_l, args.steps)
            llmc_ms = sum(took) / len(took)
            both = "fp32,bf16" if i % 2 == 0 else "bf16,fp32"
            ours = {r["dtype"]: r for r in run_all(
                [bench, "--device", "cpu", "--shape", "gpt2-124m", "--mode", "train", "--batch", str(B),
                 "--seq-len", str(T), "--dtype", both, "--warmup", "1", "--iters", str(args.steps)], env_s)}
            if ours["fp32"]["threads"] != threads:
                raise RuntimeError(f"sixnd ran {ours['fp32']['threads']} threads, llm.c {threads}")
            rounds.append((B * T * 1000.0 / llmc_ms, ours["fp32"]["tokens_per_s"], ours["bf16"]["tokens_per_s"]))
            cpu = ours["fp32"]["cpu"]
            print(f"round {i + 1}: llm.c {rounds[-1][0]:.1f}, sixnd fp32 {rounds[-1][1]:.1f}, "
                  f"bf16 {rounds[-1][2]:.1f} tokens/s", flush=True)
        print(f"load average after: {load_average()}")

    llmc, s32, s16 = ([r[k] for r in rounds] for k in range(3))
    vs32 = [a / b for a, b in zip(s32, llmc)]
    vs16 = [a / b for a, b in zip(s16, llmc)]
    print()
    print("| shape | B×T | llm.c fp32 | sixnd fp32 | sixnd bf16 | sixnd fp32 / llm.c | sixnd bf16 / llm.c |")
    print("|---|---|---|---|---|---|---|")
    print(f"| gpt2-124m | {B}×{T} | {med(llmc):.1f} | {med(s32):.1f} | {med(s16):.1f} | "
          f"{med(vs32):.2f}×{spread(vs32)} | {med(vs16):.2f}×{spread(vs16)} |")
    print(f"\ntokens/s of a training step (forward, backward, AdamW), medians of {args.repeat} round(s) "
          f"of {args.steps} timed steps each")
    print(sixnd_sees(cpu) + f"; threads: {threads} on both sides")
    print_avx2_note(args.isa, cpu)


if __name__ == "__main__":
    main()
