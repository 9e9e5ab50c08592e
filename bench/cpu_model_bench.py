"""CPU model benchmark, sixnd beside PyTorch in one run on the same machine, shapes and thread
count: forward+backward and full training-step (AdamW) tokens/s in FP32 and BF16 for GPT-2 124M
(B=4, T=64), the demo model of scripts/run.sh (d6, vocab 4096, B=8, T=128) and a small shape
(4 layers, 256 channels, vocab 4096, B=8, T=256), and on request GPT-2 124M at B=1, T=1024
(gpt2-124m-t1024); then the activation memory and step time of
each recompute policy for GPT-2 124M at B=4, T=256. Prints the CPU (model, flags, what each side
runs on) and markdown tables.

  python3 bench/cpu_model_bench.py BUILD_DIR [--isa native|avx2] [--quick] [--modes fwdbwd,train]
                                             [--shapes gpt2-124m,demo,small,gpt2-124m-t1024] [--no-recompute]
                                             [--peer-iters N] [--peer-warmup N] [--repeat N]
                                             [--peer-dtypes fp32,bf16]

--isa avx2 runs both sides on the code an AVX2-only CPU runs, on a machine that has more:
sixnd with SIXND_CPU_ISA=avx2 (its feature detection and oneDNN capped to AVX2: BF16 through
FP32 kernels; its own kernels are what the build compiled, so use a build made with
-DSIXND_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3), PyTorch with ATEN_CPU_CAPABILITY=avx2,
ONEDNN_MAX_CPU_ISA=AVX2 and its oneDNN bf16 matmul off (torch_gpt2.py --cpu-isa avx2), as
PyTorch 1.13 does on a CPU without AVX-512. Default: the
ISA of SIXND_CPU_ISA, else native. The thread count is OMP_NUM_THREADS, else the CPUs this
process may use; both sides get it and report what they ran with. Only PyTorch's command picks
OpenBLAS's kernel, and only one the CPU (as capped) supports: SkylakeX with AVX-512, Haswell with
AVX2 + FMA (Debian's OpenBLAS 0.3.21 falls to its SSE3 kernel on CPUs it does not know); the
kernel that ran is printed.

sixnd's FP32 and BF16 run in one process, their models side by side and their steps alternating,
so that their ratio compares steps a second apart. --repeat N runs each row's commands (sixnd's
pair, PyTorch's FP32 and BF16) N times, interleaved (which dtype steps first alternating between
rounds), and reports each cell's median
with the spread of the ratios, and the load average before and after: on a shared machine a
single pass is noise. --peer-dtypes fp32 leaves
out PyTorch's BF16 (a minute per step on the AVX2 path)."""
import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Row name -> (model shape, B, T). The default rows are the first three; gpt2-124m-t1024 (GPT-2's
# own context, where attention is a quarter of a BF16 step) is asked for by name.
SHAPES = {"gpt2-124m": ("gpt2-124m", 4, 64), "demo": ("demo", 8, 128), "small": ("small", 8, 256),
          "gpt2-124m-t1024": ("gpt2-124m", 1, 1024)}
DEFAULT_SHAPES = "gpt2-124m,demo,small"
MODES = ("fwdbwd", "train")
DTYPES = ("fp32", "bf16")
ISAS = ("native", "avx2")
# Debian's Python, whose PyTorch 1.13 the tables name, runs the peer.
PEER_PYTHON = "/usr/bin/python3"


class BenchError(Exception):
    """A side that failed or an argument that cannot run: one error line, not a traceback."""


def cpu_info():
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, val = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = val.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(val.split())
    return model, flags


def cpu_line(model, flags):
    """The CPU line a peer table is printed under: its model and the flags that pick its paths."""
    return f"CPU: {model}; flags: {' '.join(sorted(flags & {'avx2', 'fma', 'avx512f', 'avx512_bf16', 'amx_bf16'}))}"


def stop_children_on_sigterm():
    """A SIGTERM unwinds as an exit (143), so that the command a benchmark waits on is stopped
    (subprocess.run kills it) and its temporary files removed: by default Python dies at once and
    leaves that command running, for minutes at GPT-2's shapes, on the cores the next measurement
    shares."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def sixnd_sees(c):
    """What model_bench's "cpu" record says sixnd ran on: the CPU, its cap and which kernels."""
    return (f"sixnd sees: {c['model_name']}, flags {c['flags']} (SIXND_CPU_ISA={c['isa_cap']}), oneDNN ISA "
            f"{c['matmul_isa']}, bf16 matmuls in {c['bf16_matmul']}, own kernels compiled for "
            f"{c['kernels_compiled_for']}; {c['physical_cores']} cores")


def print_avx2_note(isa, c):
    if isa == "avx2" and c["kernels_compiled_for"] != "avx2":
        print("NOTE: sixnd's own kernels were compiled for " + c["kernels_compiled_for"] + ", not AVX2: for the exact "
              "code of an AVX2 CPU build with -DSIXND_NATIVE=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3")


def load_average():
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def tps_cell(xs):
    """Median tokens/s, or "not run" for a dtype --peer-dtypes left out."""
    return "not run" if any(math.isnan(x) for x in xs) else f"{med(xs):.0f}"


def ratio_cell(xs):
    return "-" if any(math.isnan(x) for x in xs) else f"{med(xs):.2f}×{spread(xs)}"


def spread(xs):
    """The range of the per-round ratios, after a median of several rounds."""
    return f" ({min(xs):.2f}–{max(xs):.2f})" if len(xs) > 1 else ""


def envs(isa, flags, threads):
    """(sixnd's environment, PyTorch's environment) for the ISA path."""
    base = dict(os.environ, OMP_NUM_THREADS=str(threads))
    sixnd = dict(base, SIXND_CPU_ISA=isa)
    torch = dict(base)
    torch.pop("SIXND_CPU_ISA", None)
    # OpenBLAS's SkylakeX kernels need AVX512BW too (its own dispatch asks for it): a Xeon Phi has
    # AVX512F alone.
    avx512 = {"avx512f", "avx512bw"} <= flags and isa == "native"
    if isa == "avx2":
        torch.update(ATEN_CPU_CAPABILITY="avx2", ONEDNN_MAX_CPU_ISA="AVX2")
    if avx512:
        torch["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif "avx2" in flags and "fma" in flags:
        torch["OPENBLAS_CORETYPE"] = "Haswell"
    return sixnd, torch


def run_all(cmd, env):
    """The JSON lines CMD prints; BenchError naming CMD and its last error line when it fails."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env)
    except OSError as e:
        raise BenchError(f"{cmd[0]}: {e.strerror}") from None
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    if r.returncode != 0:
        why = next((line for line in reversed(lines) if "error" in line.lower()), lines[-1] if lines else "no output")
        raise BenchError(f"{os.path.basename(cmd[1] if cmd[0] == PEER_PYTHON else cmd[0])} "
                         f"failed (exit {r.returncode}): {why.strip()}\n  command: {' '.join(cmd)}")
    out = []
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                raise BenchError(f"{' '.join(cmd)}: printed a line that is not JSON: {line[:200]}") from None
    if not out:
        raise BenchError(f"{' '.join(cmd)}: printed no result")
    return out


def run(cmd, env):
    return run_all(cmd, env)[-1]


def model_bench(build):
    """BUILD's model_bench, or BenchError saying it is not built."""
    path = os.path.join(build, "bench", "model_bench")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise BenchError(f"{path}: not built (cmake --build {build} --target model_bench)")
    return path


def check_peer(env):
    """PyTorch importable where the peer runs, asked before sixnd's first row (a minute at GPT-2's
    shape) rather than found missing after it."""
    try:
        r = subprocess.run([PEER_PYTHON, "-c", "import torch"], capture_output=True, text=True, errors="replace",
                           env=env)
    except OSError as e:
        raise BenchError(f"{PEER_PYTHON}: {e.strerror} (the PyTorch peer runs on it)") from None
    if r.returncode != 0:
        lines = [line.strip() for line in r.stderr.splitlines() if line.strip()]
        raise BenchError(f"the PyTorch peer cannot run: {PEER_PYTHON} cannot import torch: "
                         f"{lines[-1] if lines else f'exit {r.returncode}'}")


def thread_count():
    """OMP_NUM_THREADS (its first level), else the CPUs this process may use."""
    value = os.environ.get("OMP_NUM_THREADS") or ""
    if not value:
        return len(os.sched_getaffinity(0))
    first = value.split(",")[0].strip()
    if not first.isdigit() or int(first) < 1:
        raise BenchError(f"OMP_NUM_THREADS={value}: expected a thread count of 1 or more")
    return int(first)


def isa_fault(isa, flags):
    """Why a benchmark cannot run ISA on a CPU of FLAGS, or None. Checked by hand: --isa defaults
    to SIXND_CPU_ISA, which argparse holds to none of its choices (llmc_cpu_bench ran
    SIXND_CPU_ISA=avx512_core, which sixnd takes, against an llm.c built for the whole CPU). The
    AVX2 path forces its code on the peer (ATEN_CPU_CAPABILITY=avx2 is not checked against the CPU;
    llm.c is compiled for x86-64-v3), which a CPU without AVX2 and FMA cannot run."""
    if isa not in ISAS:
        return (f"--isa (or SIXND_CPU_ISA) {isa!r}: this benchmark runs {' or '.join(ISAS)} "
                "(the peer has no other path to compare)")
    if isa == "avx2" and not {"avx2", "fma"} <= flags:
        return "--isa avx2: this CPU has no AVX2 and FMA, whose code the peer would be forced to run"
    return None


def check_args(ap, args, flags):
    """Every argument checked before anything runs (a bad one costs no benchmark time)."""
    def names(flag, value, allowed):
        got = value.split(",")
        bad = [x for x in got if x not in allowed]
        if bad or not value:
            ap.error(f"{flag} {value!r}: {', '.join(map(repr, bad)) or 'nothing'} is not one of {', '.join(allowed)}")
        if len(set(got)) != len(got):
            ap.error(f"{flag} {value!r}: names one twice")
        return got
    if isa_fault(args.isa, flags):
        ap.error(isa_fault(args.isa, flags))
    args.shapes = names("--shapes", args.shapes, list(SHAPES))
    args.modes = names("--modes", args.modes, MODES)
    args.peer_dtypes = names("--peer-dtypes", args.peer_dtypes, DTYPES)
    for flag, value, least in (("--repeat", args.repeat, 1), ("--peer-iters", args.peer_iters, 0),
                               ("--peer-warmup", args.peer_warmup, 0)):
        if value < least:
            ap.error(f"{flag} {value}: must be at least {least}")


def main():
    stop_children_on_sigterm()
    try:
        bench()
    except BenchError as e:
        sys.exit(f"cpu_model_bench: {e}")


def bench():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--isa", default=os.environ.get("SIXND_CPU_ISA") or "native",
                    help=f"{' or '.join(ISAS)} (default: SIXND_CPU_ISA, else native)")
    ap.add_argument("--quick", action="store_true", help="2 timed steps instead of 4")
    ap.add_argument("--modes", default="fwdbwd,train")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"rows, of {', '.join(SHAPES)}")
    ap.add_argument("--no-recompute", action="store_true", help="skip the recompute table")
    ap.add_argument("--peer-iters", type=int, default=0,
                    help="timed PyTorch steps (default: as sixnd); 1 for its very slow bf16 on the AVX2 path")
    ap.add_argument("--peer-warmup", type=int, default=1, help="PyTorch warm-up steps with --peer-iters")
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds per row; cells are medians")
    ap.add_argument("--peer-dtypes", default="fp32,bf16", help="the dtypes PyTorch runs")
    args = ap.parse_args()
    model, flags = cpu_info()
    check_args(ap, args, flags)
    threads = thread_count()
    env_s, env_t = envs(args.isa, flags, threads)
    bench = model_bench(args.build)
    iters = ["--warmup", "1", "--iters", "2" if args.quick else "4"]
    peer_iters = ["--warmup", str(args.peer_warmup), "--iters", str(args.peer_iters)] if args.peer_iters else iters
    check_peer(env_t)
    peer = [PEER_PYTHON, os.path.join(HERE, "torch_gpt2.py"), "--device", "cpu", "--threads", str(threads),
            "--cpu-isa", args.isa]

    print(cpu_line(model, flags))
    print(f"path: --isa {args.isa}; PyTorch env: " +
          " ".join(f"{k}={env_t[k]}" for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE")
                   if k in env_t))
    print(f"load average before: {load_average()}", flush=True)
    print()
    print("| shape | B×T | mode | sixnd fp32 | sixnd bf16 | bf16/fp32 | PyTorch fp32 | PyTorch bf16 | "
          "sixnd/PyTorch fp32 | sixnd/PyTorch bf16 | sixnd MFU fp32 / bf16 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    s = t = None
    last = {}  # dtype -> sixnd's last result: what its MFU column is against
    peer_dtypes = args.peer_dtypes
    tps = lambda r: r["tokens_per_s"] if r else float("nan")  # noqa: E731
    for shape in args.shapes:
        model_shape, B, T = SHAPES[shape]
        for mode in args.modes:
            rounds = []
            for i in range(args.repeat):
                # sixnd's two dtypes in one process, their steps alternating (the first dtype
                # alternating between rounds too), so that the bf16/fp32 ratio compares steps a
                # second apart on a machine whose load drifts; then PyTorch's.
                shape_args = ["--shape", model_shape, "--mode", mode, "--batch", str(B), "--seq-len", str(T)]
                common = {d: shape_args + ["--dtype", d] for d in ("fp32", "bf16")}
                both = "fp32,bf16" if i % 2 == 0 else "bf16,fp32"
                ours = {r["dtype"]: r for r in
                        run_all([bench, "--device", "cpu", "--dtype", both] + shape_args + iters, env_s)}
                got = {}
                for dtype in ("fp32", "bf16"):
                    if dtype not in ours:
                        raise BenchError(f"model_bench gave no {dtype} result (it printed {sorted(ours)})")
                    s = last[dtype] = ours[dtype]
                    t = run(peer + common[dtype] + peer_iters, env_t) if dtype in peer_dtypes else None
                    if s["threads"] != threads or (t and (t["threads"] != threads or
                                                          t["openblas_threads"] not in (0, threads))):
                        raise BenchError(f"thread counts differ: asked for {threads}, sixnd ran {s['threads']}, "
                                         f"PyTorch {t['threads'] if t else '-'} (its OpenBLAS "
                                         f"{t['openblas_threads'] if t else '-'})")
                    got[dtype] = (s, t)
                rounds.append(got)
            s32 = [tps(r["fp32"][0]) for r in rounds]
            s16 = [tps(r["bf16"][0]) for r in rounds]
            t32 = [tps(r["fp32"][1]) for r in rounds]
            t16 = [tps(r["bf16"][1]) for r in rounds]
            bf_ratio = [b / f for b, f in zip(s16, s32)]
            vs32 = [a / b for a, b in zip(s32, t32)]
            vs16 = [a / b for a, b in zip(s16, t16)]
            mfu32 = med([r["fp32"][0]["mfu"] for r in rounds])
            mfu16 = med([r["bf16"][0]["mfu"] for r in rounds])
            print(f"| {shape} | {B}×{T} | {mode} | {med(s32):.0f} | {med(s16):.0f} | "
                  f"{ratio_cell(bf_ratio)} | {tps_cell(t32)} | {tps_cell(t16)} | {ratio_cell(vs32)} | "
                  f"{ratio_cell(vs16)} | {100 * mfu32:.1f}% / {100 * mfu16:.1f}% |", flush=True)
    print()
    print(f"load average after: {load_average()}", flush=True)
    t = t or next((r[d][1] for r in rounds for d in ("fp32", "bf16") if r[d][1]), None)
    if not args.no_recompute:
        print()
        print("| recompute (gpt2-124m, B=4, T=256, bf16, train step) | activation MiB | workspace MiB | step ms | MFU | HFU |")
        print("|---|---|---|---|---|---|")
        for rc in ("none", "selective", "full"):
            s = run([bench, "--device", "cpu", "--shape", "gpt2-124m", "--dtype", "bf16", "--mode", "train", "--batch",
                     "4", "--seq-len", "256", "--recompute", rc] + iters, env_s)
            print(f"| {rc} | {s['activation_bytes'] / 2**20:.0f} | {s['workspace_bytes'] / 2**20:.0f} | {s['step_ms']:.0f} | "
                  f"{100 * s['mfu']:.1f}% | {100 * s['hfu']:.1f}% |", flush=True)
    print("\n" + sixnd_sees(s["cpu"]) + f"; threads: sixnd {s['threads']}, PyTorch {t['threads'] if t else '-'} "
          f"(its OpenBLAS {t['openblas_threads'] if t else '-'}); "
          f"OpenBLAS kernel in PyTorch: {(t['openblas_core'] if t else None) or 'none'}")
    for dtype, r in last.items():
        print(f"MFU {dtype} is against: {r['peak_source']}; achievable (measured matmul ceiling): "
              f"{r['achievable_flops'] / 1e9:.1f} GFLOP/s")
    if not args.no_recompute:
        print(f"MFU of the recompute table is against: {s['peak_source']}")
    print_avx2_note(args.isa, s["cpu"])


if __name__ == "__main__":
    main()
