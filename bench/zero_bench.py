"""ZeRO on CPU ranks (MPI): bytes each rank sends per step against the ZeRO paper's 2Ψ (stages
0-2) and 3Ψ (stage 3) — as ring collectives send them, (n-1)/n of that — step time per stage
with 2 and 4 ranks, and peak memory per rank. One gradient-accumulation step per optimizer
step, BF16 storage. No PyTorch peer runs here; the footer says how many OpenMP threads each rank
had. Usage: python3 bench/zero_bench.py BUILD_DIR"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "util"))
import sixnd_files  # noqa: E402
from cpu_model_bench import stop_children_on_sigterm  # noqa: E402

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run(cmd):
    """(mpirun's exit status, its stderr). A benchmark stopped meanwhile stops mpirun first, which
    passes SIGTERM on to its ranks, so that none is left writing into the temporary directory."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=ENV)
    try:
        _, err = p.communicate()
    except BaseException:
        p.terminate()
        p.wait()
        raise
    return p.returncode, err


def main():
    # A stopped benchmark still removes its temporary directory (the `with` below unwinds).
    stop_children_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.split("Usage:")[0])
    ap.add_argument("build", nargs="?", default="build", help="the build directory holding sixnd")
    build = ap.parse_args().build
    sixnd = os.path.join(build, "sixnd")
    if not (os.path.isfile(sixnd) and os.access(sixnd, os.X_OK)):
        sys.exit(f"zero_bench: {sixnd}: not built (cmake --build {build} --target sixnd)")
    if not shutil.which("mpirun"):
        sys.exit("zero_bench: no mpirun on PATH (Debian's openmpi-bin)")
    print("| ranks | stage | bytes sent/rank/step | paper (n-1)/n·kΨ·2B | ratio | step ms | peak MiB/rank | model-state MiB/rank |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        toks = np.random.default_rng(0).integers(0, 4096, 400000)
        # A write's OSError (a full disk) names no file, and was a traceback.
        try:
            sixnd_files.write_shard(data, toks)
        except OSError as e:
            sys.exit(f"zero_bench: {data}: {e.strerror}")
        for n in (2, 4):
            for stage in (0, 1, 2, 3):
                log = os.path.join(tmp, f"n{n}s{stage}.jsonl")
                # Unbound: Open MPI's default pins each of 2 ranks to a single core (more ranks to a
                # socket), while sixnd train shares out the CPUs a rank may use among the ranks.
                cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(n), sixnd,
                       "train", "--init", "random", "--model", "d6", "--vocab-size", "4096", "--device", "cpu",
                       "--dtype", "bf16", "--train-data", data, "--batch", str(8 // n), "--seq-len", "128", "--steps",
                       "6", "--zero", str(stage), "--out", os.path.join(tmp, f"r{n}{stage}"), "--log", log,
                       "--peak-tflops", "1"]
                rc, err = run(cmd)
                if rc != 0:
                    lines = [l.strip() for l in err.splitlines() if l.strip() and not l.startswith("---")]
                    why = next((l for l in lines if "error" in l.lower()), lines[-1] if lines else "no output")
                    sys.exit(f"zero_bench: {n} ranks, ZeRO-{stage}: mpirun exited {rc}: {why}\n"
                             f"  command: {' '.join(cmd)}")
                recs = [json.loads(l) for l in open(log)]
                head = recs[0]
                steps = [r for r in recs if r.get("type") == "step"][2:]
                psi = head["params"]
                k = 3 if stage == 3 else 2
                paper = (n - 1) / n * k * psi * 2
                sent = np.mean([s["comm_bytes"] for s in steps])
                ms = np.median([s["step_ms"] for s in steps])
                mem = steps[-1]["memory_ranks"][0]
                state = sum(mem[c] for c in ("params", "grads", "master", "adam_m", "adam_v"))
                print(f"| {n} | {stage} | {sent / 2**20:.2f} MiB | {paper / 2**20:.2f} MiB | {sent / paper:.2f} | {ms:.0f} | "
                      f"{mem['peak'] / 2**20:.0f} | {state / 2**20:.1f} |", flush=True)
    cpus = len(os.sched_getaffinity(0))
    omp = os.environ.get("OMP_NUM_THREADS")
    threads = (f"OMP_NUM_THREADS={omp}" if omp else
               f"{max(1, cpus // 2)} with 2 ranks, {max(1, cpus // 4)} with 4 (the CPUs shared out among the ranks)")
    print(f"\nmodel: d6 with vocabulary 4096 (Ψ = {psi:,} parameters), global batch 8×128, BF16 + FP32 master; "
          f"OpenMP threads per rank: {threads}; {cpus} CPUs")


if __name__ == "__main__":
    main()
