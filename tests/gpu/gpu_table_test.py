#!/usr/bin/env python3
"""scripts/gpu_table.py, the verdict and table that end gpu_check.sh, on made-up logs of a run
with a device: failing case names are shown (parameterised ones too), a binary whose every case
skipped on a device fails the run, a case that never finished is named, sanitizer errors and
sixnd's timeouts fail it while a PyTorch peer's timeout is a note, a binary the loader refuses
shows the loader's line, the header names the driver, gpu_nccl_test's per-stage verdicts come
with its counts, steps left out by SIXND_GPU_STEPS are
neither run nor failures, the summary written while the run goes on says INCOMPLETE and the
step's key numbers come as a few short lines, and each number stands beside PyTorch's with the
right ratio and MFU; garbled numbers leave gaps, not a traceback."""
import json
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ.get("SIXND_SOURCE") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TABLE = os.path.join(SRC, "scripts", "gpu_table.py")
STEPS = ["probe", "gpu_ops_test", "gpu_attention_test", "gpu_train_test", "gpu_muon_test", "gpu_nccl_test", "memcheck",
         "racecheck",
         "attention_sixnd", "attention_torch", "gpt2_sixnd_none", "gpt2_sixnd_selective", "gpt2_sixnd_full",
         "gpt2_torch"]
PROBE = """date: 2026-12-04T10:00:00Z
os: Ubuntu 24.04.2 LTS
glibc: ldd (Ubuntu GLIBC 2.39-0ubuntu8.4) 2.39
python3: /opt/torch/.venv/bin/python3
GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)
gpu: NVIDIA H200, 580.159.03, 143771 MiB, 1980 MHz
cublaslt: /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13 (python3's packages)
nccl: /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 (python3's packages)
ldd: gpu_ops_test: libcublasLt.so.13 => /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13
racecheck kernels: flash_attention
"""
LOADER_ERROR = ("/tmp/x/bin/gpu_muon_test: error while loading shared libraries: libcublasLt.so.13: "
                "cannot open shared object file: No such file or directory\n")
NCCL_LINES = "nccl reference: one-process GPU loss 5.3481 -> 2.0113, max rel diff vs CPU 4.10e-03 (tolerance 2e-2): PASS\n" + \
    "".join(f"nccl zero {z}: loss 5.3481 -> 2.0113, max rel diff vs one process 0.00e+00 (tolerance 1e-2): PASS\n"
            for z in range(4))
PEAK = 989.4
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


def gtest(cases):
    """GoogleTest output for [(name, 'OK'|'FAILED'|'SKIPPED'|None)]; None: started, never ended."""
    lines = [f"[==========] Running {len(cases)} tests from 1 test suite."]
    for name, res in cases:
        lines.append(f"[ RUN      ] {name}")
        if res == "FAILED":
            lines.append(f"{name}: Failure")
            lines.append(f"[  FAILED  ] {name}, where GetParam() = 4-byte object <01-00 00-00> (12 ms)")
        elif res:
            lines.append(f"[ {'      OK' if res == 'OK' else ' SKIPPED'} ] {name} (3 ms)")
    return "\n".join(lines) + "\n"


def attention_md(impl_rows):
    out = ["# bench", "| impl | hs | T | B | NH | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for impl, hs, T, fwd, fb in impl_rows:
        f = "-" if fwd is None else f"{fwd:.1f}"
        out.append(f"| {impl} | {hs} | {T} | {16384 // T} | {2048 // hs} | 1.0 | {f} | 2.0 | {fb:.1f} |")
    return "\n".join(out) + "\n"


def write_run(d, status=None, logs=None, steps=STEPS):
    """steps.tsv for `steps` (status ok unless `status` says otherwise; None: no line) and their
    logs; `logs` replaces or (None) removes a log."""
    status = status or {}
    with open(os.path.join(d, "steps.tsv"), "w") as f:
        for s in steps:
            if status.get(s, "ok") is not None:
                f.write(f"{s}\t{status.get(s, 'ok')}\t5\t30\n")
    base = {
        "probe.log": PROBE,
        "gpu_ops_test.log": gtest([("CudaOps/Matmul/0", "OK"), ("CudaOps/Matmul/1", "OK")]),
        "gpu_attention_test.log": gtest([("Shapes/FlashVsNaive.OutputAndGradients/B1_T64_NH1_hs64", "OK")]),
        "gpu_train_test.log": gtest([("GpuTraining.TracksTheCpuAndRepeatsBitForBit", "OK")]),
        "gpu_muon_test.log": gtest([("DTypes/CudaMuonTest.NewtonSchulz/f32", "OK")]),
        "gpu_nccl_test.log": gtest([("NcclComm.EachCollectiveAtWorldSizeOne", "OK")]) + NCCL_LINES
        + gtest([("NcclComm.ZeroStagesTrainLikeOneProcess", "OK")]).split("\n", 1)[1],
        "memcheck.log": "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n",
        "racecheck.log": "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
        "attention_sixnd.md": "# peak bf16 dense: 989.4 TFLOP/s (table)\n" + attention_md(
            [("sixnd flash (deterministic)", hs, T, 400.0, 300.0) for hs in (64, 128) for T in (1024, 2048, 4096)]
            + [("sixnd flash (atomic dQ)", hs, T, None, 330.0) for hs in (64, 128) for T in (1024, 2048, 4096)]),
        "attention_torch.md": attention_md(
            [("torch SDPA flash", hs, T, 500.0, 250.0) for hs in (64, 128) for T in (1024, 2048, 4096)]),
        "gpt2_torch.log": json.dumps({"variant": "eager", "tokens_per_s": 200000.0, "flops_per_token": 8.5e8}) + "\n"
        + json.dumps({"variant": "compile", "tokens_per_s": 250000.0, "flops_per_token": 8.5e8,
                      "mfu": 8.5e8 * 250000.0 / (PEAK * 1e12)}) + "\n",
    }
    for p, tps in (("none", 300000.0), ("selective", 280000.0), ("full", 240000.0)):
        base[f"gpt2_sixnd_{p}.log"] = json.dumps({"peer": "sixnd", "recompute": p, "tokens_per_s": tps,
                                                  "mfu": 8.5e8 * tps / (PEAK * 1e12), "peak_tflops": PEAK}) + "\n"
    base.update(logs or {})
    for name, text in base.items():
        if text is not None:
            with open(os.path.join(d, name), "w") as f:
                f.write(text)


def table(d, extra=()):
    r = subprocess.run([sys.executable, TABLE, "--out", d, "--budget", "355", "--elapsed", "200", "--batch", "16",
                        "--gpu", "NVIDIA H200"] + list(extra), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def summary(d):
    with open(os.path.join(d, "summary.md")) as f:
        return f.read()


def row(text, start):
    for line in text.splitlines():
        if line.startswith("| " + start):
            return [c.strip() for c in line.strip().strip("|").split("|")]
    return None


def main():
    with tempfile.TemporaryDirectory() as d:
        write_run(d)
        rc, out = table(d)
        check(rc == 0 and "result: PASSED: every check" in out, f"a clean run is not PASSED (rc {rc}):\n{out}")
        check(out.splitlines()[0].startswith("# sixnd gpu_check, ") and "NVIDIA H200 (driver 580.159.03)" in
              out.splitlines()[0], f"the header does not name the driver: {out.splitlines()[0]}")
        check("machine: Ubuntu 24.04.2 LTS; glibc 2.39; cuBLASLt /opt/torch" in out, "no machine line (OS, glibc)")
        r = row(out, "gpu_muon_test (cases)")
        check(r is not None and r[1] == "1 passed, 0 failed, 0 skipped", f"gpu_muon_test row: {r}")
        r = row(out, "compute-sanitizer racecheck")
        check(r is not None and r[0].endswith("(kernels: flash_attention)") and r[1] == "0 errors",
              f"racecheck row does not say it checked the flash kernels only: {r}")
        check(out.rstrip().splitlines()[-1].startswith("|"), "the output does not end with the table")
        r = row(out, "attention fwd, hs 64, T 2048")
        check(r == ["attention fwd, hs 64, T 2048 (TFLOP/s)", "400.0", "500.0", "0.80×", "40.4%", "50.5%"],
              f"attention fwd row: {r}")
        r = row(out, "attention fwd+bwd, atomic dQ, hs 128, T 4096")
        check(r is not None and r[1:4] == ["330.0", "250.0", "1.32×"], f"atomic row: {r}")
        r = row(out, "GPT-2 124M train, recompute selective vs PyTorch eager")
        # PyTorch eager printed no MFU: it comes from its FLOPs per token, its tokens/s and sixnd's peak.
        check(r is not None and r[1:] == ["280,000", "200,000", "1.40×", "24.1%", "17.2%"], f"eager row: {r}")
        r = row(out, "GPT-2 124M train, recompute full vs torch.compile")
        check(r is not None and r[1:] == ["240,000", "250,000", "0.96×", "20.6%", "21.5%"], f"compile row: {r}")
        with open(os.path.join(d, "summary.md")) as f:
            check(f.read().strip() == out.strip(), "summary.md is not the printed text")

    with tempfile.TemporaryDirectory() as d:
        write_run(d, status={"gpu_ops_test": "failed (rc 1)", "gpu_attention_test": "timeout",
                             "memcheck": "failed (rc 3)"},
                  logs={"gpu_ops_test.log": gtest([("CudaOps/Matmul/0", "OK"), ("CudaOps/Matmul/1", "FAILED")]),
                        "gpu_attention_test.log": gtest([("Shapes/FlashVsNaive.OutputAndGradients/B1_T64_NH1_hs64",
                                                          None)]),
                        "gpu_train_test.log": gtest([("GpuTraining.TracksTheCpuAndRepeatsBitForBit", "SKIPPED")]),
                        "memcheck.log": "========= Invalid __global__ read\n========= ERROR SUMMARY: 2 errors\n"})
        rc, out = table(d)
        check(rc == 1 and "result: FAILED" in out, f"a failing run is not FAILED (rc {rc}):\n{out}")
        check("failing: gpu_ops_test: CudaOps/Matmul/1" in out, "the failing parameterised case is not named")
        check("failing: gpu_attention_test: Shapes/FlashVsNaive.OutputAndGradients/B1_T64_NH1_hs64 (did not finish"
              in out, "the case that never finished is not named")
        check("gpu_train_test: every case skipped on a machine with a device" in out,
              "all-skipped on a device is not a failure")
        check("timed out: gpu_attention_test (30 s)" in out, "the timeout is not listed")
        r = row(out, "compute-sanitizer memcheck")
        check(r is not None and "2 errors" in r[1] and r[1].startswith("FAILED"), f"memcheck row: {r}")

    with tempfile.TemporaryDirectory() as d:
        write_run(d, logs={"racecheck.log": "========= Error: Device not supported\n"},
                  status={"racecheck": "failed (rc 1)"})
        rc, out = table(d)
        check(rc == 0 and "note: racecheck: compute-sanitizer cannot run on this machine" in out,
              f"an unsupported sanitizer should be a note, not a failure (rc {rc}):\n{out}")

    with tempfile.TemporaryDirectory() as d:
        write_run(d, logs={"attention_torch.md": None, "gpt2_torch.log": None}, status={"gpt2_torch": "timeout"})
        rc, out = table(d)
        r = row(out, "attention fwd, hs 64, T 1024")
        check(r is not None and r[2:4] == ["–", "–"], f"a missing peer number must show as a gap: {r}")
        check(rc == 0 and "result: PASSED" in out and "note: gpt2_torch: timed out at 30 s" in out
              and "timed out: gpt2_torch (30 s)" in out,
              f"a timed-out PyTorch peer is a note, not a failure (rc {rc}):\n{out}")

    with tempfile.TemporaryDirectory() as d:
        write_run(d, status={"gpt2_sixnd_full": "timeout", "attention_torch": "failed (rc 1)"})
        rc, out = table(d)
        check(rc == 1 and "gpt2_sixnd_full: timeout" in out.split("\n")[1] and
              "attention_torch: failed (rc 1)" in out.split("\n")[1],
              f"sixnd's own timeout and a peer's failure still fail the run (rc {rc}):\n{out}")

    # A binary the loader refuses prints one line and no GoogleTest output: that line is the news.
    with tempfile.TemporaryDirectory() as d:
        write_run(d, status={"gpu_muon_test": "failed (rc 127)", "attention_sixnd": "failed (rc 127)"},
                  logs={"gpu_muon_test.log": LOADER_ERROR,
                        "attention_sixnd.md": LOADER_ERROR.replace("gpu_muon_test", "attention_bench"),
                        "probe.log": re.sub(r"(?m)^ldd: .*$", "ldd: gpu_ops_test: libcublasLt.so.13 => not found",
                                            PROBE)})
        rc, out = table(d)
        check(rc == 1 and "gpu_muon_test: failed (rc 127)" in out, f"a binary that did not start must fail (rc {rc})")
        check("failing: gpu_muon_test: did not start: /tmp/x/bin/gpu_muon_test: error while loading shared "
              "libraries: libcublasLt.so.13" in out, f"the loader's line is not in the summary:\n{out}")
        r = row(out, "gpu_muon_test (cases)")
        check(r is not None and r[1].startswith("FAILED (RC 127): did not start: ") and "libcublasLt" in r[1],
              f"gpu_muon_test row: {r}")
        check("failing: attention_sixnd: /tmp/x/bin/attention_bench: error while loading" in out,
              "a benchmark that did not start does not show the loader's line")
        check("note: the loader: gpu_ops_test: libcublasLt.so.13 => not found" in out,
              "the probe's load check that found no libcublasLt is not in the summary")

    # The sanitizer itself refusing (a bad option, say): its own line, not just "no summary".
    with tempfile.TemporaryDirectory() as d:
        write_run(d, status={"racecheck": "failed (rc 1)"},
                  logs={"racecheck.log": "========= Error: option '--kernel-name' is not recognised\n"})
        rc, out = table(d)
        r = row(out, "compute-sanitizer racecheck")
        check(rc == 1 and r is not None and "no summary: Error: option '--kernel-name' is not recognised" in r[1],
              f"racecheck row: {r}")

    # SIXND_GPU_STEPS=tests: the rest is "not selected", neither a failure nor a row of gaps.
    with tempfile.TemporaryDirectory() as d:
        chosen = ["probe", "gpu_ops_test", "gpu_attention_test", "gpu_train_test", "gpu_muon_test", "gpu_nccl_test"]
        write_run(d, status={s: "not selected" for s in STEPS if s not in chosen},
                  logs={n: None for n in ("memcheck.log", "racecheck.log", "attention_sixnd.md", "attention_torch.md",
                                          "gpt2_torch.log", "gpt2_sixnd_none.log", "gpt2_sixnd_selective.log",
                                          "gpt2_sixnd_full.log")})
        rc, out = table(d)
        check(rc == 0 and "result: PASSED: every selected check" in out,
              f"a chosen subset that passed (rc {rc}):\n{out}")
        check("steps: probe gpu_ops_test gpu_attention_test gpu_train_test gpu_muon_test gpu_nccl_test (SIXND_GPU_STEPS"
              in out,
              "the summary does not say which steps were chosen")
        r = row(out, "compute-sanitizer memcheck")
        check(r == ["compute-sanitizer memcheck, attention", "not selected", "", "", "", ""], f"memcheck row: {r}")
        check(row(out, "attention") is None and row(out, "GPT-2") is None,
              "steps not selected must not leave rows of gaps")

    # While the run goes on: after each step the summary so far (INCOMPLETE, the rest pending, not
    # failed) and that step's key numbers only, in short lines.
    with tempfile.TemporaryDirectory() as d:
        write_run(d, status={s: None for s in STEPS[3:]})
        rc, out = table(d, ["--progress", "gpu_attention_test"])
        text = summary(d)
        check(rc == 0 and out.strip() == "gpu_attention_test: 1 passed, 0 failed, 0 skipped",
              f"--progress must print the step's key numbers only (rc {rc}):\n{out}")
        check("result: INCOMPLETE: the call ended after gpu_attention_test (the run's own end replaces this "
              "summary). So far: PASSED" in text, f"the summary so far:\n{text}")
        r = row(text, "gpu_muon_test (cases)")
        check(r is not None and r[1] == "pending", f"a step not reached yet: {r}")
        write_run(d, status={"gpu_train_test": "running", **{s: None for s in STEPS[4:]}})
        rc, out = table(d, ["--progress", "gpu_train_test", "--quiet"])
        check(rc == 0 and out == "", f"--quiet prints nothing: {out!r}")
        check("result: INCOMPLETE: the call ended while gpu_train_test ran" in summary(d),
              f"the summary taken as a step starts:\n{summary(d)}")
        write_run(d)
        for step, want in (("probe", "gpu: NVIDIA H200, 580.159.03, 143771 MiB, 1980 MHz"),
                           ("attention_sixnd", "sixnd hs 64, T 1024/2048/4096: fwd 400.0/400.0/400.0, "
                                               "fwd+bwd 300.0/300.0/300.0 TFLOP/s"),
                           ("memcheck", "memcheck: 0 errors"),
                           ("gpt2_sixnd_selective", "gpt2_sixnd_selective: 280,000 tok/s, MFU 24.1%"),
                           ("gpt2_torch", "gpt2_torch: eager 200,000 tok/s, compile 250,000 tok/s")):
            rc, out = table(d, ["--progress", step])
            lines = out.strip().splitlines()
            check(rc == 0 and want in [line.strip() for line in lines], f"--progress {step}: {out}")
            check(all(len(line) <= 160 for line in lines) and len(lines) <= 5, f"--progress {step} is not short: {out}")
        # gpu_nccl_test: its counts, then its verdict per ZeRO stage and of the reference run.
        rc, out = table(d, ["--progress", "gpu_nccl_test"])
        lines = [line.strip() for line in out.strip().splitlines()]
        check(rc == 0 and lines == ["gpu_nccl_test: 2 passed, 0 failed, 0 skipped"] + NCCL_LINES.splitlines()
              and all(len(line) <= 160 for line in lines), f"--progress gpu_nccl_test: {out}")

    # Garbled numbers (a value of the wrong type, a row whose T is no number): gaps in the table,
    # the rest of it whole (the table used to end in a traceback, losing the whole summary).
    with tempfile.TemporaryDirectory() as d:
        write_run(d, logs={
            "gpt2_sixnd_none.log": json.dumps({"tokens_per_s": "fast", "mfu": [1], "peak_tflops": "n/a"}) + "\n",
            "gpt2_torch.log": json.dumps({"variant": ["eager"], "tokens_per_s": 1.0}) + "\n"
            + json.dumps({"variant": "compile", "tokens_per_s": "x", "flops_per_token": None}) + "\n",
            "attention_torch.md": "| torch SDPA flash | 64 | 1k | 16 | 32 | 1.0 | 500.0 | 2.0 | 250.0 |\n"
            + "| torch SDPA flash | 128 | 1024 | 16 | 16 | 1.0 | 500.0 | 2.0 | 250.0 |\n"})
        rc, out = table(d)
        check("Traceback" not in out and rc == 0, f"garbled numbers: rc {rc}:\n{out}")
        r = row(out, "GPT-2 124M train, recompute none vs torch.compile")
        check(r is not None and r[1:4] == ["–", "–", "–"], f"garbled GPT-2 numbers are gaps: {r}")
        r = row(out, "GPT-2 124M train, recompute selective vs PyTorch eager")
        check(r is not None and r[1] == "280,000" and r[2] == "–", f"the other numbers stay: {r}")
        r = row(out, "attention fwd, hs 128, T 1024")
        check(r is not None and r[1:3] == ["400.0", "500.0"], f"the attention rows that parse stay: {r}")

    with tempfile.TemporaryDirectory() as d:
        write_run(d, logs={"gpu_ops_test.log": gtest([("CudaOps/Matmul/0", "SKIPPED")])})
        rc, out = table(d, ["--no-device", "no nvidia-smi on this machine"])
        check(rc == 0 and "result: NO DEVICE: no nvidia-smi on this machine" in out,
              f"no device must be a clean, stated outcome (rc {rc}):\n{out}")

    if FAILURES:
        print("FAILED: " + "\n".join(FAILURES))
        return 1
    print("PASSED: verdict, failing names, all-skipped, timeouts (peers' as notes), loader errors, driver, "
          "selected steps, progress summaries, sanitizer, ratios and MFU of the gpu_check table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
