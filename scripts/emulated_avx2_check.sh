#!/usr/bin/env bash
# sixnd on an emulated AVX2-only CPU: qemu-user's TCG (which has AVX2 and FMA but no AVX-512)
# with the CPUID of an AMD EPYC Rome (Zen 2), over the build for x86-64-v3 (preset avx2). Where
# SIXND_CPU_ISA=avx2 caps a machine that has more, nothing here is forced: sixnd's feature
# detection reads an AVX2-only CPUID, oneDNN dispatches on it, and an AVX-512 instruction anywhere
# (sixnd, oneDNN, libgomp) ends the run with SIGILL. It runs
#   1. the GoogleTest binaries that CI reruns under SIXND_CPU_ISA=avx2 (CPU ops, the model, the
#      decoder, the trainer) and the CPU peak's, one OpenMP thread each, as many at once as cores;
#   2. `sixnd train` on the tiny model in FP32 and BF16 with 2 OpenMP threads, and checks the run
#      header (the CPU as detected, its name too: AVX2 and FMA, no BF16 dot products, oneDNN at
#      AVX2, BF16 matmuls in FP32 arithmetic, nothing capped), that oneDNN itself reports AVX2 and
#      no AVX-512 kernel, and that every BF16 loss is within the BF16 tolerance (1%) of FP32's.
# Correctness only: emulated code runs about 300x (scalar) to 6,000x (vector FMAs) slower than
# native, so nothing is timed, and the trainer is given --peak-tflops (its timed matmul ceiling
# would take 8 minutes). About 15 minutes on 2 cores after the build.
#   bash scripts/emulated_avx2_check.sh [--cpu QEMU_CPU_MODEL]   (default EPYC-Rome-v2)
# Logs: build-avx2/emulated/; the last line says how many of the checks passed.
set -euo pipefail
cd "$(dirname "$(readlink -f -- "$0")")/.."

QEMU_CPU=EPYC-Rome-v2
if [ $# -eq 2 ] && [ "$1" = --cpu ] && [ -n "$2" ]; then
  QEMU_CPU=$2
elif [ $# -gt 0 ]; then
  echo "usage: bash scripts/emulated_avx2_check.sh [--cpu QEMU_CPU_MODEL]" >&2
  exit 2
fi

bash scripts/setup.sh qemu-user

# Nothing forced: the emulated CPU alone decides (the header checks below expect isa_cap native).
for v in SIXND_CPU_ISA SIXND_BF16_MATMUL ONEDNN_MAX_CPU_ISA; do
  if [ -n "${!v+x}" ]; then
    echo "emulated check: ignoring $v=${!v} (nothing is forced here)" >&2
    unset "$v"
  fi
done

source scripts/avx2_path_tests.sh
TESTS=("${AVX2_PATH_TESTS[@]}")

echo "== build (preset avx2: -march=x86-64-v3) ==" >&2
cmake --preset avx2 >/dev/null
cmake --build build-avx2 -j"$(nproc)" --target sixnd "${TESTS[@]}"

LOGS=build-avx2/emulated
rm -rf "$LOGS"
mkdir -p "$LOGS"
# TCG names every CPUID feature of the model it cannot emulate, once per process: noise here.
emu() { qemu-x86_64 -cpu "$QEMU_CPU" "$@" 2> >(grep -v "TCG doesn't support requested feature" >&2); }
export SIXND_SHARED="$PWD/../shared" SIXND_SOURCE="$PWD"

if ! emu /bin/true; then
  echo "emulated check: qemu-x86_64 -cpu $QEMU_CPU does not run here" >&2
  exit 1
fi
# The CPU's timed matmul ceiling, ten 1-GFLOP products, is the one case here that emulation
# makes take hours; the peak's formula and its stability stay tested.
FILTER_train_cpu_peak_test=-CpuPeak.TrainerPeakOnTheCpuIsTheComputedOne

echo "== ${#TESTS[@]} test binaries on an emulated $QEMU_CPU (AVX2, no AVX-512) ==" >&2
failed=()
# Each binary runs in a process group of its own, which a signal to this script stops (a SIGTERM
# to this script alone ended it and left the emulated binaries, minutes each, running).
# shellcheck disable=SC2317  # run by the traps below
stop_jobs() {
  local p
  for p in $(jobs -p); do kill -TERM -- "-$p" 2>/dev/null || true; done
  exit "$1"
}
trap 'stop_jobs 129' HUP
trap 'stop_jobs 130' INT
trap 'stop_jobs 143' TERM
run_one() {
  local t=$1 filter=$2 start=$SECONDS
  if OMP_NUM_THREADS=1 emu "build-avx2/tests/$t" --gtest_filter="${filter:-*}" >"$LOGS/$t.log" 2>&1; then
    echo "  ok   $t ($((SECONDS - start)) s)" >&2
  else
    echo "  FAIL $t ($((SECONDS - start)) s): $LOGS/$t.log" >&2
    echo "$t" >>"$LOGS/failed"
  fi
}
running=0
for t in "${TESTS[@]}"; do
  filter_var=FILTER_$t
  set -m
  run_one "$t" "${!filter_var:-}" &
  set +m
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
[ -f "$LOGS/failed" ] && mapfile -t failed <"$LOGS/failed"

echo "== sixnd train, tiny model, FP32 and BF16, on the emulated CPU ==" >&2
/usr/bin/python3 - "$LOGS/train.bin" <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["SIXND_SOURCE"], "tests", "util"))
import numpy as np
import sixnd_files
sixnd_files.write_shard(sys.argv[1], np.random.default_rng(0).integers(0, 101, 20000))
EOF
train_ok=1
for dtype in fp32 bf16; do
  if ! OMP_NUM_THREADS=2 ONEDNN_VERBOSE=1 emu build-avx2/sixnd train --init random --model tiny --device cpu \
      --dtype "$dtype" --train-data "$LOGS/train.bin" --shuffle off --batch 4 --seq-len 32 --steps 4 --lr 1e-3 \
      --peak-tflops 1 --log "$LOGS/$dtype.jsonl" --out "$LOGS/$dtype" >"$LOGS/train_$dtype.out" 2>"$LOGS/train_$dtype.err"; then
    echo "  FAIL sixnd train --dtype $dtype: $LOGS/train_$dtype.err" >&2
    train_ok=0
  fi
done
if [ "$train_ok" = 1 ] && ! /usr/bin/python3 - "$LOGS" <<'EOF'
import json, os, sys
logs = sys.argv[1]
fails = []
def run(dtype):
    recs = [json.loads(l) for l in open(os.path.join(logs, dtype + ".jsonl"))]
    return recs[0], [r["loss"] for r in recs if r.get("type") == "step"]
h32, l32 = run("fp32")
h16, l16 = run("bf16")
for name, h in (("fp32", h32), ("bf16", h16)):
    cpu = h["cpu"]
    want = {"isa_cap": "native", "matmul_isa": "avx2", "native_bf16": False, "bf16_matmul": "fp32",
            "kernels_compiled_for": "avx2"}
    for k, v in want.items():
        if cpu.get(k) != v:
            fails.append(f"{name} header: cpu.{k} is {cpu.get(k)!r}, expected {v!r}")
    if h.get("device_name") != cpu.get("model_name"):
        fails.append(f"{name} header: device_name {h.get('device_name')!r} is not the detected CPU {cpu.get('model_name')!r}")
    flags = cpu.get("flags", "").split()
    if "avx2" not in flags or "fma" not in flags or any(f.startswith("avx512") or f.startswith("amx") for f in flags):
        fails.append(f"{name} header: cpu.flags {cpu.get('flags')!r} is not an AVX2-only CPU's")
    print(f"  {name}: {cpu.get('model_name')} (family {cpu.get('family')}, model {cpu.get('model')}), flags {cpu.get('flags')!r}, "
          f"oneDNN {cpu.get('matmul_isa')}, bf16 matmul {cpu.get('bf16_matmul')}, L1d {cpu.get('l1d_bytes')}, L2 {cpu.get('l2_bytes')}", file=sys.stderr)
verbose = open(os.path.join(logs, "train_fp32.out")).read() + open(os.path.join(logs, "train_fp32.err")).read()
if "isa:Intel AVX2" not in verbose:
    fails.append("oneDNN did not report isa:Intel AVX2 in the FP32 run (train_fp32.out)")
if any("avx512" in l.lower() or "amx" in l.lower() for l in verbose.splitlines() if l.startswith("onednn_verbose") and ",exec," in l):
    fails.append("oneDNN ran an AVX-512 or AMX kernel in the FP32 run (train_fp32.out)")
if len(l32) != 4 or len(l16) != 4:
    fails.append(f"steps logged: fp32 {len(l32)}, bf16 {len(l16)}, expected 4")
for i, (a, b) in enumerate(zip(l32, l16)):
    if abs(a - b) > 0.01 * abs(a):
        fails.append(f"step {i + 1}: bf16 loss {b:.5f} is more than 1% from fp32's {a:.5f}")
print(f"  losses fp32 {[round(x, 4) for x in l32]}, bf16 {[round(x, 4) for x in l16]}", file=sys.stderr)
for f in fails:
    print("  FAIL " + f, file=sys.stderr)
sys.exit(1 if fails else 0)
EOF
then
  train_ok=0
fi
[ "$train_ok" = 1 ] || failed+=("sixnd train")

total=$((${#TESTS[@]} + 1))
if [ ${#failed[@]} -gt 0 ]; then
  echo "emulated AVX2-only CPU ($QEMU_CPU): $((total - ${#failed[@]})) of $total passed; failed: ${failed[*]}" >&2
  exit 1
fi
echo "emulated AVX2-only CPU ($QEMU_CPU): all $total passed (${#TESTS[@]} test binaries, sixnd train FP32/BF16)" >&2
