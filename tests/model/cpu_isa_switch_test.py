"""SIXND_CPU_ISA, the switch that runs the code of an AVX2-only CPU on a machine with more:
`sixnd train` in FP32 and BF16, natively and with SIXND_CPU_ISA=avx2 under ONEDNN_VERBOSE.
Checks that the forced run's header reports the capped features (no AVX-512, no BF16 dot
products, oneDNN at avx2, BF16 matmuls in FP32, a BF16 peak equal to the FP32 one where the build
is for AVX2, and counting its 16-lane kernels where it is for AVX-512), that oneDNN
itself says it dispatched to AVX2 and ran only f32 kernels without AVX-512 code (the FP32 run's
matmuls; the BF16 one's go to sixnd's packed GEMM, so oneDNN runs none of them), that the native
run reports what the CPU has, that the BF16 losses of both paths stay within the BF16 tolerance
(1%) of FP32, and that a bad SIXND_CPU_ISA ends with one error line naming it. Then
SIXND_BF16_MATMUL, which overrides where BF16 matmuls run: fp32 sends them to the packed GEMM
(oneDNN runs none of them), bf16 to oneDNN's BF16 kernels where the CPU has BF16 dot products and
is refused with one error line where it has none (or under SIXND_CPU_ISA=avx2), both paths
within the BF16 tolerance of FP32; an unknown value is refused too. The same switch steers BF16
flash attention onto BF16 dot products (where the CPU has AVX512-BF16 and no AMX) or FP32 FMAs:
the headers say which (the model's heads are 16 wide, so its runs use it), and where the CPU has
AVX512-BF16 the attention tests pass under both settings. A build without oneDNN has no dispatch
to steer: there the test checks only that SIXND_BF16_MATMUL=bf16 is refused."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from bad_input import Case, run_case  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
STEPS = 4


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def cpu_vendor():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    return ""


def train(tmp, name, dtype, env):
    log = os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--n-embd", "64", "--device", "cpu", "--dtype", dtype,
           "--train-data", os.path.join(tmp, "train.bin"), "--shuffle", "off", "--batch", "4", "--seq-len", "32",
           "--steps", str(STEPS), "--lr", "1e-3", "--log", log, "--out", os.path.join(tmp, name)]
    run_env = {k: v for k, v in os.environ.items() if k not in ("SIXND_CPU_ISA", "SIXND_BF16_MATMUL", "ONEDNN_VERBOSE")}
    run_env.update(env)  # the native runs are native even when the suite runs under SIXND_CPU_ISA
    r = subprocess.run(cmd, capture_output=True, text=True, env=run_env, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: exit {r.returncode}: {r.stderr[-1500:]}")
    recs = [json.loads(l) for l in open(log)]
    return recs[0], [x["loss"] for x in recs if x.get("type") == "step"], r.stdout


def bf16_args(tmp):
    """A one-step BF16 training run into tmp/bad, for the cases that must be refused."""
    return ["train", "--init", "random", "--model", "tiny", "--device", "cpu", "--dtype", "bf16",
            "--train-data", os.path.join(tmp, "train.bin"), "--steps", "1", "--out", os.path.join(tmp, "bad")]


def main():
    if not os.path.exists("/proc/cpuinfo"):
        print("SKIP: no /proc/cpuinfo")
        return 77
    flags = cpu_flags()
    if "avx2" not in flags:
        print("SKIP: this CPU has no AVX2, so the AVX2 path cannot run here")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), np.random.default_rng(0).integers(0, 101, 20000))
        avx2 = {"SIXND_CPU_ISA": "avx2", "ONEDNN_VERBOSE": "1"}
        h32, f32, _ = train(tmp, "fp32", "fp32", {})
        if h32["cpu"]["matmul_engine"] != "oneDNN":
            # Nothing here for the switches to steer but a refusal: the packed GEMM runs every product.
            fault = run_case(Case("SIXND_BF16_MATMUL=bf16 without oneDNN", bf16_args(tmp),
                                  ["SIXND_BF16_MATMUL", "no oneDNN"], unchanged=[os.path.join(tmp, "bad")],
                                  env={"SIXND_BF16_MATMUL": "bf16"}))
            return sixnd_files.report([f"SIXND_BF16_MATMUL=bf16 without oneDNN: {fault}"] if fault else [],
                                      "a build without oneDNN refuses SIXND_BF16_MATMUL=bf16 (the rest of "
                                      "this test needs oneDNN's dispatch to steer)")
        hnat, bnat, _ = train(tmp, "bf16_native", "bf16", {})
        h2, b2, verbose16 = train(tmp, "bf16_avx2", "bf16", avx2)
        h2f, _, verbose = train(tmp, "fp32_avx2", "fp32", avx2)

        cpu = h2["cpu"]
        for key, want in (("isa_cap", "avx2"), ("matmul_isa", "avx2"), ("bf16_matmul", "fp32"), ("bf16_attention", "fp32"),
                          ("native_bf16", False)):
            if cpu.get(key) != want:
                failures.append(f"forced header: cpu.{key} is {cpu.get(key)!r}, expected {want!r}")
        if any(f in cpu["flags"].split() for f in ("avx512f", "avx512_bf16", "amx_bf16")):
            failures.append(f"forced header still reports {cpu['flags']}")
        # The forced BF16 run multiplies on sixnd's packed GEMM in the vectors the build has: the
        # FP32 (oneDNN, capped) peak where the build is for AVX2; where it is for AVX-512 its own
        # wider peak, saying so.
        if "bf16 runs in fp32" not in h2["peak_source"]:
            failures.append(f"forced BF16 peak source does not say it runs in FP32: {h2['peak_source']}")
        if cpu["kernels_compiled_for"] == "avx2" and h2["peak_flops"] != h2f["peak_flops"]:
            failures.append(f"forced BF16 peak {h2['peak_flops']} ({h2['peak_source']}) is not the FP32 one "
                            f"{h2f['peak_flops']}, with kernels built for AVX2")
        if cpu["kernels_compiled_for"] == "avx512f" and (
                "the width sixnd's kernels were built for" not in h2["peak_source"]
                or h2["peak_flops"] < h2f["peak_flops"]):
            failures.append(f"forced BF16 peak {h2['peak_flops']} ({h2['peak_source']}) does not count the "
                            f"AVX-512 kernels that run it (FP32's: {h2f['peak_flops']})")
        if not h2["achievable_flops"] > 0 or "measured matmul ceiling" not in h2["achievable_source"]:
            failures.append(f"no achievable figure in the header: {h2['achievable_source']!r}")

        lines = [l for l in verbose.splitlines() if l.startswith("onednn_verbose")]
        isa = [l for l in lines if ",isa:" in l]
        execs = [l for l in lines if ",exec," in l]
        if not isa or "AVX2" not in isa[0] or "AVX-512" in isa[0]:
            failures.append(f"oneDNN's ISA line: {isa[:1]}")
        if not execs:
            failures.append("oneDNN ran no primitive under ONEDNN_VERBOSE")
        bad = [l for l in execs if "avx512" in l or "amx" in l or "bf16" in l]
        if bad:
            failures.append(f"{len(bad)} oneDNN kernels beyond AVX2 FP32, e.g. {bad[0]}")
        execs16 = [l for l in verbose16.splitlines() if l.startswith("onednn_verbose") and ",exec," in l]
        if execs16:
            failures.append(f"the forced BF16 run sent {len(execs16)} matmuls to oneDNN, e.g. {execs16[0]}")
        print(f"oneDNN under SIXND_CPU_ISA=avx2: {isa[0] if isa else '?'}; {len(execs)} matmuls, kernels "
              f"{sorted({l.split(',')[4] for l in execs})}")

        native = hnat["cpu"]
        has_dots = "avx512_bf16" in flags or "amx_bf16" in flags
        # BF16 dot products do the matmuls only where they beat the FP32 FMAs: AMX, or AMD's AVX512-BF16.
        want_native = "amx_bf16" in flags or ("avx512_bf16" in flags and cpu_vendor() == "AuthenticAMD")
        if native["isa_cap"] != "native" or native["native_bf16"] != has_dots:
            failures.append(f"native header: {native}")
        if native["bf16_matmul"] != ("bf16" if want_native else "fp32"):
            failures.append(f"native run computes bf16 matmuls in {native['bf16_matmul']}")
        # Attention takes the dot products where the matmuls do, unless those are AMX's (VDPBF16PS
        # is slower than the FP32 FMAs on Intel cores), if this build has them (-march=native on
        # such a CPU).
        vector_dots = "avx512_bf16" in flags and "amx_bf16" not in flags and native["kernels_bf16_dots"]
        if native["bf16_attention"] != ("bf16" if want_native and vector_dots else "fp32"):
            failures.append(f"native run computes bf16 attention in {native['bf16_attention']}")

        for name, losses in (("native", bnat), ("avx2", b2)):
            worst = max(abs(a - b) / b for a, b in zip(losses, f32))
            print(f"bf16 {name} losses {['%.4f' % x for x in losses]}, fp32 {['%.4f' % x for x in f32]}: worst {worst:.2e}")
            if len(losses) != STEPS or worst > 1e-2:
                failures.append(f"bf16 {name} path: losses {losses} vs fp32 {f32}")

        bad_value = Case("SIXND_CPU_ISA=avx9", ["train", "--init", "random", "--model", "tiny", "--device", "cpu",
                                                "--train-data", os.path.join(tmp, "train.bin"), "--steps", "1",
                                                "--out", os.path.join(tmp, "bad")],
                         ["SIXND_CPU_ISA", "avx9", "avx2"], unchanged=[os.path.join(tmp, "bad")],
                         env={"SIXND_CPU_ISA": "avx9"})
        fault = run_case(bad_value)
        if fault:
            failures.append(f"bad SIXND_CPU_ISA: {fault}")

        forced = [("fp32", {"SIXND_BF16_MATMUL": "fp32", "ONEDNN_VERBOSE": "1"})]
        if has_dots:
            forced.append(("bf16", {"SIXND_BF16_MATMUL": "bf16", "ONEDNN_VERBOSE": "1"}))
        for value, env in forced:
            h, losses, out = train(tmp, "bf16_switch_" + value, "bf16", env)
            execs = [l for l in out.splitlines() if l.startswith("onednn_verbose") and ",exec," in l]
            if h["cpu"]["bf16_matmul"] != value or h["cpu"]["bf16_matmul_switch"] != value:
                failures.append(f"SIXND_BF16_MATMUL={value}: header says bf16_matmul {h['cpu']['bf16_matmul']}, "
                                f"switch {h['cpu'].get('bf16_matmul_switch')}")
            want_attention = "bf16" if value == "bf16" and vector_dots else "fp32"
            if h["cpu"]["bf16_attention"] != want_attention:
                failures.append(f"SIXND_BF16_MATMUL={value}: header says bf16_attention {h['cpu']['bf16_attention']}, "
                                f"expected {want_attention}")
            if value == "fp32" and execs:
                failures.append(f"SIXND_BF16_MATMUL=fp32 sent {len(execs)} matmuls to oneDNN, e.g. {execs[0]}")
            if value == "bf16" and not any("bf16" in l for l in execs):
                failures.append("SIXND_BF16_MATMUL=bf16 ran no oneDNN bf16 matmul")
            worst = max(abs(a - b) / b for a, b in zip(losses, f32))
            print(f"SIXND_BF16_MATMUL={value}: {len(execs)} oneDNN matmuls, worst loss difference from fp32 {worst:.2e}")
            if len(losses) != STEPS or worst > 1e-2:
                failures.append(f"SIXND_BF16_MATMUL={value}: losses {losses} vs fp32 {f32}")
        if "avx512_bf16" in flags and native["kernels_bf16_dots"]:
            # Both attention arithmetics against float64 and FP32, whichever the CPU's default is.
            attention = os.path.join(os.environ["SIXND_BUILD"], "tests", "model_cpu_attention_test")
            for value in ("bf16", "fp32"):
                env = {k: v for k, v in os.environ.items() if k != "SIXND_CPU_ISA"}
                env["SIXND_BF16_MATMUL"] = value
                r = subprocess.run([attention], capture_output=True, text=True, env=env)
                print(f"attention tests under SIXND_BF16_MATMUL={value}: exit {r.returncode}")
                if r.returncode != 0:
                    failures.append(f"attention tests under SIXND_BF16_MATMUL={value}: exit {r.returncode}: "
                                    f"{r.stdout[-1500:]}{r.stderr[-500:]}")
        base = bf16_args(tmp)
        refused = [Case("SIXND_BF16_MATMUL=fast", base, ["SIXND_BF16_MATMUL", "fast", "auto, bf16 or fp32"],
                        unchanged=[os.path.join(tmp, "bad")], env={"SIXND_BF16_MATMUL": "fast"}),
                   Case("SIXND_BF16_MATMUL=bf16 without dot products", base,
                        ["SIXND_BF16_MATMUL", "BF16 dot products", "SIXND_CPU_ISA=avx2"],
                        unchanged=[os.path.join(tmp, "bad")], env={"SIXND_BF16_MATMUL": "bf16", "SIXND_CPU_ISA": "avx2"})]
        for case in refused:
            fault = run_case(case)
            if fault:
                failures.append(f"{case.name}: {fault}")
    return sixnd_files.report(failures, "SIXND_CPU_ISA=avx2 runs the AVX2 code path; SIXND_BF16_MATMUL picks the "
                                        "BF16 matmul path; BF16 tracks FP32 on every path")


if __name__ == "__main__":
    sys.exit(main())
