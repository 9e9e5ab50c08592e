"""bench/cpu_model_bench.py (and the argument checks of bench/torch_gpt2.py), with a stand-in
model_bench whose tokens/s are known, beside the real PyTorch peer:
1. every bad argument (--repeat 0, --modes/--shapes/--peer-dtypes naming nothing or something
   unknown, negative --peer-iters, an --isa or SIXND_CPU_ISA PyTorch has no path for, --isa avx2
   on a CPU without AVX2 (ATEN_CPU_CAPABILITY=avx2 would force PyTorch onto it), a bad
   OMP_NUM_THREADS, a build without model_bench; of torch_gpt2.py, counts out of range, a device
   it cannot use and --compile where PyTorch has no torch.compile, the last two tracebacks until
   now) is one error line before anything runs, never a traceback;
2. a failing side (sixnd's model_bench, or PyTorch) is one error line naming it and its error; a
   PyTorch that cannot be imported is named before sixnd's side runs;
3. over 3 rounds, each cell is the median of the rounds and each ratio the median of the per-round
   ratios (bf16 / fp32, sixnd / PyTorch) with their range; the table's rows are contiguous (the
   load average is printed outside it); the CPU and both sides' (equal) thread counts are printed.
Skips (77) without PyTorch."""
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ.get("SIXND_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = os.path.join(SRC, "bench", "cpu_model_bench.py")
sys.path.insert(0, os.path.join(SRC, "tests", "util"))
from checklist import check, verdict  # noqa: E402
import stand_in  # noqa: E402

# tokens/s per round, by dtype: bf16/fp32 per round 1.5, 1.0, 0.5 (median 1.00, range 0.50-1.50)
FP32 = [100.0, 200.0, 400.0]
BF16 = [150.0, 200.0, 200.0]
STUB = r'''#!/usr/bin/env python3
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "ran"), "a").write(" ".join(sys.argv[1:]) + "\n")
if os.environ.get("STUB_FAIL"):
    sys.exit("model_bench: error: " + os.environ["STUB_FAIL"])
counter = os.path.join(here, "round")
i = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(i + 1))
a = sys.argv[1:]
dtypes = a[a.index("--dtype") + 1].split(",")
tps = {"fp32": FP32, "bf16": BF16}
cpu = {"model_name": "stub", "flags": "avx2 fma", "isa_cap": os.environ.get("SIXND_CPU_ISA"), "matmul_isa": "x",
       "bf16_matmul": "fp32", "kernels_compiled_for": "avx2", "physical_cores": 1}
for d in dtypes:
    print(json.dumps({"dtype": d, "tokens_per_s": tps[d][i % 3], "threads": int(os.environ["OMP_NUM_THREADS"]),
                      "mfu": 0.5, "hfu": 0.5, "cpu": cpu, "peak_source": "stub " + d + " peak",
                      "achievable_flops": 1e9, "activation_bytes": 0, "workspace_bytes": 0, "step_ms": 1.0}))
'''.replace("FP32", repr(FP32)).replace("BF16", repr(BF16))


# The script as run on a CPU without AVX2.
NO_AVX2 = ("import sys; sys.path.insert(0, sys.argv[1]); import cpu_model_bench as m; "
           "m.cpu_info = lambda: ('a CPU without AVX2', {'sse4_2', 'avx'}); sys.argv = sys.argv[1:]; m.main()")


def run(args, env=None, build=None):
    e = dict(os.environ, OMP_NUM_THREADS="1")
    e.pop("SIXND_CPU_ISA", None)
    e.update(env or {})
    r = subprocess.run([sys.executable, BENCH, build] + args, capture_output=True, text=True, env=e, timeout=600)
    return r.returncode, r.stdout, r.stderr


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: no PyTorch")
        return 77
    with tempfile.TemporaryDirectory(prefix="sixnd_cpu_bench_") as t:
        build = os.path.join(t, "build")
        stand_in.write_script(os.path.join(build, "bench", "model_bench"), STUB)
        ran = os.path.join(build, "bench", "ran")
        quick = ["--shapes", "demo", "--modes", "fwdbwd", "--quick", "--no-recompute", "--peer-dtypes", "fp32"]

        # --- 1. bad arguments: one line, exit 2 or 1, nothing run
        bad = [(["--repeat", "0"], {}), (["--repeat", "-2"], {}), (["--modes", "foo"], {}), (["--modes", ""], {}),
               (["--shapes", ","], {}), (["--peer-dtypes", "fp16"], {}), (["--peer-iters", "-1"], {}),
               (["--peer-warmup", "-1"], {}), (["--isa", "avx512_core"], {}), ([], {"SIXND_CPU_ISA": "avx512_core"}),
               ([], {"OMP_NUM_THREADS": "two"})]
        for args, env in bad:
            rc, out, err = run(quick + args, env, build)
            last = err.strip().splitlines()[-1] if err.strip() else ""
            check(rc in (1, 2) and "Traceback" not in err and ("error" in last.lower() or "OMP_NUM_THREADS" in last),
                  f"{args} {env}: exit {rc}, {last!r}")
        r = subprocess.run([sys.executable, "-c", NO_AVX2, os.path.dirname(BENCH), build] + quick + ["--isa", "avx2"],
                           capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=600)
        last = (r.stderr.strip().splitlines() or [""])[-1]
        check(r.returncode == 2 and "Traceback" not in r.stderr and "--isa avx2: this CPU has no AVX2 and FMA" in last,
              f"--isa avx2 without AVX2: exit {r.returncode}, {last!r}")
        check(not os.path.exists(ran), "bad arguments: model_bench never ran")
        rc, out, err = run(quick, {}, os.path.join(t, "nowhere"))
        check(rc == 1 and "Traceback" not in err and "not built" in err, f"no build: exit {rc}, {err.strip()!r}")
        import torch
        peer_bad = [(["--iters", "0"], "must be"), (["--iters", "-1"], "must be"), (["--seq-len", "300"], "context"),
                    (["--warmup", "-1"], "must be"), (["--device", "foo"], "--device foo: expected cpu or cuda"),
                    (["--device", "meta"], "--device meta: expected cpu or cuda")]
        if not torch.cuda.is_available():
            peer_bad.append((["--device", "cuda"], "--device cuda: PyTorch"))
        if not hasattr(torch, "compile"):
            peer_bad += [(["--compile"], "has no torch.compile"), (["--also-compile"], "has no torch.compile")]
        for args, needle in peer_bad:
            r = subprocess.run([sys.executable, os.path.join(SRC, "bench", "torch_gpt2.py"), "--shape", "demo",
                                "--batch", "1", "--seq-len", "8", "--warmup", "0", "--iters", "1"] + args,
                               capture_output=True, text=True, timeout=120)
            last = (r.stderr.strip().splitlines() or [""])[-1]
            check(r.returncode == 2 and "Traceback" not in r.stderr and needle in last and not r.stdout,
                  f"torch_gpt2.py {args}: exit {r.returncode}, {last!r}")

        # --- 2. a failing side
        rc, out, err = run(quick, {"STUB_FAIL": "boom"}, build)
        check(rc == 1 and "Traceback" not in err and "model_bench failed (exit 1): model_bench: error: boom" in err,
              f"failing sixnd side: exit {rc}, {err.strip()!r}")
        broken_torch, hollow_torch = os.path.join(t, "broken_torch"), os.path.join(t, "hollow_torch")
        for d, text in ((broken_torch, 'raise ImportError("torch broken on purpose")\n'), (hollow_torch, "")):
            os.makedirs(d)
            with open(os.path.join(d, "torch.py"), "w") as f:
                f.write(text)
        if os.path.exists(ran):
            os.remove(ran)
        rc, out, err = run(quick, {"PYTHONPATH": broken_torch}, build)
        check(rc == 1 and "Traceback" not in err and "the PyTorch peer cannot run" in err
              and "torch broken on purpose" in err, f"no PyTorch: exit {rc}, {err.strip()!r}")
        check(not os.path.exists(ran), "no PyTorch: named before model_bench ran")
        rc, out, err = run(quick, {"PYTHONPATH": hollow_torch}, build)
        check(rc == 1 and "Traceback" not in err and "torch_gpt2.py failed (exit 1)" in err
              and "torch.nn" in err, f"failing PyTorch side: exit {rc}, {err.strip()!r}")

        # --- 3. medians and ratios over 3 rounds
        if os.path.exists(os.path.join(build, "bench", "round")):
            os.remove(os.path.join(build, "bench", "round"))
        rc, out, err = run(quick + ["--repeat", "3"], {}, build)
        print(out)
        check(rc == 0, f"3 rounds: exit {rc} {err[-500:]!r}")
        rows = [line for line in out.splitlines() if line.startswith("| demo |")]
        cells = [c.strip() for c in rows[0].strip("|").split("|")] if rows else []
        if len(cells) == 11:
            check(cells[3] == "200" and cells[4] == "200", f"sixnd cells are medians of the rounds: {cells[3:5]}")
            check(cells[5] == "1.00× (0.50–1.50)", f"bf16/fp32 is the median of the per-round ratios, with their range: "
                  f"{cells[5]!r}")
            torch_tps = float(cells[6])
            m = re.match(r"([0-9.]+)× \(([0-9.]+)–([0-9.]+)\)", cells[8])
            check(m is not None and float(m.group(2)) <= float(m.group(1)) <= float(m.group(3)),
                  f"sixnd/PyTorch fp32 is a median within its range: {cells[8]!r}")
            # sixnd over PyTorch, not the other way round: its median is near sixnd's median over
            # PyTorch's (PyTorch's rounds differ a little, so only the direction is checked).
            check(m is not None and abs(float(m.group(1)) - 200 / torch_tps) < 0.5 * 200 / torch_tps,
                  f"sixnd/PyTorch is sixnd over PyTorch: {cells[8]!r} against 200/{torch_tps:.0f}")
            check(cells[7] == "not run" and cells[9] == "-", f"PyTorch bf16 left out: {cells[7]!r}, {cells[9]!r}")
        else:
            check(False, f"no demo row: {rows}")
        lines = out.splitlines()
        head = next((i for i, line in enumerate(lines) if line.startswith("| shape |")), None)
        check(head is not None and lines[head + 1].startswith("|---") and lines[head + 2].startswith("| demo |"),
              "the table's rows follow its header (the load average is outside it)")
        check(lines and lines[0].startswith("CPU: ") and "flags:" in lines[0], f"the CPU line comes first: {lines[:1]}")
        check("threads: sixnd 1, PyTorch 1" in out, "both sides' thread counts are printed, and equal")
        check("MFU fp32 is against: stub fp32 peak" in out and "MFU bf16 is against: stub bf16 peak" in out,
              "each dtype's MFU says what peak it is against")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
