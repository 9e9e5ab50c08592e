#!/usr/bin/env bash
# The one script run on the device machine (DESIGN.md, "Building and the GPU"), from the
# repository root, with the build folder of the `gpu` CMake preset carried along:
#   cmake --preset gpu && cmake --build --preset gpu     (here, before the call)
#   scripts/gpu_check.sh                                 (there; logs under $OUT)
# Steps: probe the machine; ctest -L gpu; compute-sanitizer memcheck and racecheck on the
# attention test; the attention benchmark and its PyTorch peer; the GPT-2 124M training
# benchmark and its PyTorch peer once they exist. Each step has a time limit and the script
# skips what is left once SIXND_GPU_BUDGET_S (default 420 s) is spent, so the whole run stays
# well under 8 minutes. Prints one summary table last.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${SIXND_GPU_BUILD:-build-gpu}
OUT=${OUT:-$ROOT/gpu_out}
BUDGET=${SIXND_GPU_BUDGET_S:-420}
mkdir -p "$OUT"
START=$(date +%s)
declare -a SUMMARY=()

elapsed() { echo $(( $(date +%s) - START )); }
note() { SUMMARY+=("| $1 | $2 | $3 |"); echo "== $1: $2 ($3)"; }
# step NAME LIMIT_S LOG CMD...: runs CMD with a time limit unless the budget is spent.
step() {
    local name=$1 limit=$2 log=$3
    shift 3
    if (( $(elapsed) + 20 > BUDGET )); then note "$name" "skipped" "time budget spent"; return 0; fi
    local t0=$(date +%s) rc
    timeout "$limit" "$@" >"$OUT/$log" 2>&1
    rc=$?
    local dt=$(( $(date +%s) - t0 ))
    if (( rc == 0 )); then note "$name" "ok" "${dt}s, $log"
    elif (( rc == 124 )); then note "$name" "TIMEOUT" "${limit}s limit, $log"
    else note "$name" "FAILED rc=$rc" "${dt}s, $log"; fi
    return 0
}

# --- probe ---------------------------------------------------------------------------------
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi || echo "nvidia-smi failed"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
    echo "--- libcublasLt / libnccl"
    ldconfig -p | grep -E "libcublasLt|libnccl" || echo "(not in the ldconfig cache)"
    ls -d /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib 2>/dev/null
    find / -xdev \( -name 'libcublasLt.so*' -o -name 'libnccl.so*' \) 2>/dev/null | head -20
    command -v nvcc && nvcc --version | tail -1
    command -v compute-sanitizer || echo "no compute-sanitizer on PATH"
    python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
} >"$OUT/probe.log" 2>&1
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
note "probe" "${GPU:-no GPU found}" "probe.log"

# The binaries load libcublasLt.so.13 dynamically: point the loader at one if the cache has none.
if ! ldconfig -p | grep -q "libcublasLt.so.13"; then
    LT=$(find /usr/local/cuda*/ /usr/lib /opt -xdev -name 'libcublasLt.so.13' 2>/dev/null | head -1)
    if [[ -n "$LT" ]]; then
        export LD_LIBRARY_PATH="$(dirname "$LT")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        echo "using $LT" >>"$OUT/probe.log"
    fi
fi

# ctest's files name the paths the build was configured at; make them exist here too.
CONFIGURED=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
if [[ -n "$CONFIGURED" && "$CONFIGURED" != "$ROOT" && ! -e "$CONFIGURED" ]]; then
    mkdir -p "$(dirname "$CONFIGURED")" && ln -s "$ROOT" "$CONFIGURED"
fi

# --- tests ---------------------------------------------------------------------------------
if [[ -f "$BUILD/CTestTestfile.cmake" ]]; then
    step "ctest -L gpu" 150 ctest_gpu.log ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 120
else
    note "ctest -L gpu" "skipped" "no $BUILD (build it with: cmake --preset gpu && cmake --build --preset gpu)"
fi

ATT="$BUILD/tests/gpu_attention_test"
[[ -x "$ATT" ]] || ATT=$(find "$BUILD" -name gpu_attention_test -type f -perm -u+x 2>/dev/null | head -1)
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n "$ATT" && -x "$ATT" && -n "$SAN" ]]; then
    FILTER='*B2_T100_NH3_hs64*:*B3_T130_NH4_hs128*'
    step "memcheck attention" 90 memcheck.log "$SAN" --tool memcheck --error-exitcode 3 "$ATT" --gtest_filter="$FILTER"
    step "racecheck attention" 90 racecheck.log "$SAN" --tool racecheck --error-exitcode 3 "$ATT" --gtest_filter="$FILTER"
else
    note "compute-sanitizer" "skipped" "no attention test binary or no compute-sanitizer"
fi

# --- attention benchmark, then PyTorch on the same card ----------------------------------------
if [[ -x "$BUILD/bench/attention_bench" ]]; then
    step "attention bench (sixnd)" 150 attention_bench.md "$BUILD/bench/attention_bench"
else
    note "attention bench (sixnd)" "skipped" "no $BUILD/bench/attention_bench"
fi
step "attention bench (torch SDPA)" 150 torch_attention.md python3 bench/torch_attention.py

# --- GPT-2 124M training step (T=1024, bf16), sixnd (each recompute policy) and PyTorch -------
MB="$BUILD/bench/model_bench"
if [[ -x "$MB" ]]; then
    for rc in none selective full; do
        step "GPT-2 124M train (sixnd, recompute $rc)" 120 "sixnd_train_$rc.log" \
            "$MB" --shape gpt2-124m --dtype bf16 --mode train --batch 8 --seq-len 1024 --recompute "$rc" --device cuda --warmup 3 --iters 10
    done
else
    note "GPT-2 124M train (sixnd)" "skipped" "no $MB"
fi
step "GPT-2 124M train (torch)" 150 torch_gpt2.log \
    python3 bench/torch_gpt2.py --shape gpt2-124m --device cuda --dtype bf16 --mode train --batch 8 --seq-len 1024 --compile --warmup 3 --iters 10

# --- summary -------------------------------------------------------------------------------
{
    echo
    echo "# sixnd gpu_check, $(date -u +%Y-%m-%d), ${GPU:-unknown GPU}, $(elapsed)s"
    echo "| step | result | detail |"
    echo "|---|---|---|"
    printf '%s\n' "${SUMMARY[@]}"
    grep -h -E "^\[  (PASSED|FAILED) |tests passed|tests failed" "$OUT/ctest_gpu.log" 2>/dev/null | tail -3
    grep -h "ERROR SUMMARY" "$OUT/memcheck.log" "$OUT/racecheck.log" 2>/dev/null
    echo
    echo "| impl | hs | T | B | NH | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s |"
    echo "|---|---|---|---|---|---|---|---|---|"
    cat "$OUT/attention_bench.md" "$OUT/torch_attention.md" 2>/dev/null | grep -E "^\| (sixnd|torch)" | sort -t'|' -k3,3n -k4,4n -s
    echo
    echo "## GPT-2 124M training step, T=1024, B=8, bf16 (one JSON line each)"
    for f in sixnd_train_none.log sixnd_train_selective.log sixnd_train_full.log torch_gpt2.log; do
        [[ -f "$OUT/$f" ]] && grep -h '^{' "$OUT/$f" | tail -1
    done
} | tee "$OUT/summary.md"
