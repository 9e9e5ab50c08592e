"""bench/llmc_cpu_bench.py with a stand-in llm.c (its Makefile "builds" a script printing train_gpt2's
step lines with known times) and a stand-in model_bench whose tokens/s are known:
1. llm.c's tokens/s come from the mean of its timed steps, as sixnd's do (a slow step counts on
   both sides alike), and the ratios are sixnd over llm.c; the kernels sixnd ran are printed, and
   under --isa avx2 a note where its own were compiled for more (both had been left out);
2. a checkout without llm.c's llmc/, --steps past the 40 steps train_gpt2 runs, no `make` on the
   PATH and a PyTorch that cannot be imported are each one error line, never a traceback, and
   leave no temporary directory; so are, before llm.c is built, a SIXND_CPU_ISA (--isa's default)
   that names neither path (avx512_core had run sixnd capped against llm.c built for the whole CPU)
   and --isa avx2 on a CPU without AVX2 (llm.c would be compiled for instructions it lacks); a
   build without model_bench is named on a line of the same form (it was the one without
   "llmc_cpu_bench:");
3. a model file that cannot be written (the file-size limit standing in for a full disk) is one
   error line naming it (it was a traceback), and leaves no temporary directory.
The GPT-2 model file (half a gigabyte) is not written in part 1, where write_inputs is replaced,
nor in part 3, where the model is shrunk to one layer of 8 channels.
Skips (77) without numpy."""
import os
import resource
import subprocess
import sys
import tempfile

SRC = os.environ.get("SIXND_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH_DIR = os.path.join(SRC, "bench")
sys.path.insert(0, os.path.join(SRC, "tests", "util"))
from checklist import check, verdict  # noqa: E402
import stand_in  # noqa: E402

# Step 0 (warm-up) is slow; steps 1-4 take 100, 100, 100 and 500 ms: mean 200 ms (1280 tokens/s
# at B=4, T=64), median 100 ms.
FAKE_LLMC = r'''#!/bin/sh
echo "val loss 11.0"
echo "step 0: train loss 11.0 (took 5000.0 ms)"
for ms in 100.0 100.0 100.0 500.0 100.0; do
  echo "step 1: train loss 10.0 (took $ms ms)"
done
'''
MAKEFILE = ("train_gpt2: train_gpt2.c\n"
            "\tcp train_gpt2.c train_gpt2 && chmod +x train_gpt2 && echo cc train_gpt2.c -o $@\n")
STUB = r'''#!/usr/bin/env python3
import json, os, sys
a = sys.argv[1:]
for d in a[a.index("--dtype") + 1].split(","):
    print(json.dumps({"dtype": d, "tokens_per_s": {"fp32": 2560.0, "bf16": 5120.0}[d],
                      "threads": int(os.environ["OMP_NUM_THREADS"]),
                      "cpu": {"model_name": "stub", "flags": "avx2 fma avx512f", "isa_cap": os.environ["SIXND_CPU_ISA"],
                              "matmul_isa": "stub-isa", "bf16_matmul": "stub-path", "kernels_compiled_for": "avx512",
                              "physical_cores": 1}}))
'''
# The script as run, but with write_inputs a no-op (train_gpt2 here reads nothing).
NO_INPUTS = ("import sys; sys.path.insert(0, sys.argv[1]); import llmc_cpu_bench as m; "
             "m.write_inputs = lambda work: None; sys.argv = sys.argv[1:]; m.main()")
# The script as run on a CPU without AVX2, with write_inputs a no-op.
NO_AVX2 = ("import sys; sys.path.insert(0, sys.argv[1]); import llmc_cpu_bench as m; "
           "m.cpu_info = lambda: ('a CPU without AVX2', {'sse4_2', 'avx'}); m.write_inputs = lambda work: None; "
           "sys.argv = sys.argv[1:]; m.main()")
# The script as run, with a GPT-2 of one layer of 8 channels (a 1.6 MB model file).
TINY_MODEL = ("import sys; sys.path.insert(0, sys.argv[1]); import torch_gpt2; "
              "torch_gpt2.SHAPES['gpt2-124m'] = dict(n_layer=1, n_head=1, n_embd=8, vocab_size=50257, max_seq_len=64); "
              "import llmc_cpu_bench as m; sys.argv = sys.argv[1:]; m.main()")


def limit_file_size():
    """A file-size limit of 512 KiB for the child: its writes past it fail as on a full disk
    (Python ignores SIGXFSZ)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 19, 1 << 19))


def main():
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("skipped: no numpy")
        return 77
    with tempfile.TemporaryDirectory(prefix="sixnd_llmc_bench_") as t:
        llmc = os.path.join(t, "llm.c")
        os.makedirs(os.path.join(llmc, "llmc"))
        with open(os.path.join(llmc, "train_gpt2.c"), "w") as f:
            f.write(FAKE_LLMC)
        with open(os.path.join(llmc, "Makefile"), "w") as f:
            f.write(MAKEFILE)
        build = os.path.join(t, "build")
        stand_in.write_script(os.path.join(build, "bench", "model_bench"), STUB)
        tmp = os.path.join(t, "tmp")
        os.makedirs(tmp)
        env = dict(os.environ, OMP_NUM_THREADS="1", TMPDIR=tmp)
        env.pop("SIXND_CPU_ISA", None)

        def run(prefix, args, extra=None):
            r = subprocess.run(prefix + [build, "--llmc", llmc] + args, capture_output=True, text=True,
                               env=dict(env, **(extra or {})), timeout=120)
            return r.returncode, r.stdout, r.stderr

        # --- 1. mean step times on both sides
        rc, out, err = run([sys.executable, "-c", NO_INPUTS, BENCH_DIR], ["--steps", "4"])
        print(out)
        check(rc == 0, f"stand-in run: exit {rc}, {err.strip()[-500:]!r}")
        row = next((line for line in out.splitlines() if line.startswith("| gpt2-124m |")), "")
        cells = [c.strip() for c in row.strip("|").split("|")]
        check(cells[2:7] == ["1280.0", "2560.0", "5120.0", "2.00×", "4.00×"],
              f"llm.c's tokens/s from its mean step (1280), ratios sixnd over llm.c (2.00×, 4.00×): {cells[2:7]}")
        check("oneDNN ISA stub-isa, bf16 matmuls in stub-path, own kernels compiled for avx512" in out
              and "SIXND_CPU_ISA=native" in out and "NOTE" not in out, "the kernels sixnd ran are printed")
        rc, out, err = run([sys.executable, "-c", NO_INPUTS, BENCH_DIR], ["--steps", "4", "--isa", "avx2"])
        check(rc == 0 and "SIXND_CPU_ISA=avx2" in out and "NOTE: sixnd's own kernels were compiled for avx512" in out,
              f"--isa avx2 on kernels compiled for more says so: exit {rc}, {out.strip()[-300:]!r}")

        # --- 2. faults: one line, no traceback, nothing left in TMPDIR
        script = [sys.executable, os.path.join(BENCH_DIR, "llmc_cpu_bench.py")]
        fake_torch = os.path.join(t, "fake_torch")
        os.makedirs(fake_torch)
        with open(os.path.join(fake_torch, "torch.py"), "w") as f:
            f.write('raise ImportError("torch broken on purpose")\n')
        cases = [("--steps 41", script, ["--steps", "41"], None, "--steps"),
                 ("SIXND_CPU_ISA=avx512_core", [sys.executable, "-c", NO_INPUTS, BENCH_DIR], [],
                  {"SIXND_CPU_ISA": "avx512_core"}, "--isa (or SIXND_CPU_ISA) 'avx512_core': this benchmark runs"),
                 ("--isa avx2 without AVX2", [sys.executable, "-c", NO_AVX2, BENCH_DIR], ["--isa", "avx2"], None,
                  "--isa avx2: this CPU has no AVX2 and FMA"),
                 ("no make", script, [], {"PATH": os.path.join(t, "nowhere")}, "make"),
                 ("no PyTorch", script, [], {"PYTHONPATH": fake_torch}, "torch broken on purpose")]
        for what, prefix, args, extra, needle in cases:
            rc, out, err = run(prefix, args, extra)
            lines = err.strip().splitlines()
            check(rc == 1 and "Traceback" not in err and len(lines) == 1 and lines[0].startswith("llmc_cpu_bench: ")
                  and needle in lines[0], f"{what}: exit {rc}, {err.strip()!r}")
            check(os.listdir(tmp) == [], f"{what}: no temporary directory left: {os.listdir(tmp)}")
            if "isa" in what.lower():
                check(out == "", f"{what}: refused before llm.c was built: {out!r}")
        r = subprocess.run(script + [os.path.join(t, "nowhere"), "--llmc", llmc], capture_output=True, text=True,
                           env=env, timeout=120)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and lines[0].startswith("llmc_cpu_bench: ")
              and "model_bench: not built" in lines[0], f"no model_bench: exit {r.returncode}, {r.stderr.strip()!r}")
        try:
            import torch  # noqa: F401
        except ImportError:
            print("part 3 skipped: no PyTorch")
        else:
            r = subprocess.run([sys.executable, "-c", TINY_MODEL, BENCH_DIR, build, "--llmc", llmc],
                               capture_output=True, text=True, env=env, timeout=300, preexec_fn=limit_file_size)
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 1 and "Traceback" not in r.stderr and len(lines) == 1
                  and lines[0].startswith("llmc_cpu_bench: ") and "gpt2_124M.bin: File too large" in lines[0],
                  f"model file not written: exit {r.returncode}, {r.stderr.strip()[-500:]!r}")
            check(os.listdir(tmp) == [], f"model file not written: no temporary directory left: {os.listdir(tmp)}")
        os.rmdir(os.path.join(llmc, "llmc"))
        rc, out, err = run(script, [])
        check(rc == 1 and "Traceback" not in err and "no llmc here" in err, f"no llmc/: exit {rc}, {err.strip()!r}")
        check(os.listdir(tmp) == [], f"no llmc/: no temporary directory left: {os.listdir(tmp)}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
