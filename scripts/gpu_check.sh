#!/usr/bin/env bash
# The one script run on a lent GPU (DESIGN.md, "Building and the GPU"; README.md, "Running the
# GPU check on a lent device").
#   here:  cmake --preset gpu && cmake --build --preset gpu && scripts/gpu_stage.sh
#   there: bash scripts/gpu_check.sh          (repository root, build-gpu/stage carried)
#      or: bash build-gpu/stage/scripts/gpu_check.sh
# Steps, in order of value, each under its own time limit; the limits add up to the budget
# printed first (at most 360 s), and no step runs past that budget:
#   probe (nvidia-smi; where libcublasLt.so.13 is) -> the gpu test binaries, run directly ->
#   compute-sanitizer memcheck and racecheck on two attention shapes -> the attention benchmark
#   and PyTorch's flash SDPA (head dims 64, 128; T 1k, 2k, 4k) -> GPT-2 124M training steps, one
#   per recompute policy, and PyTorch eager and torch.compile at the same batch.
# The output ends with one table (scripts/gpu_table.py). $OUT (the folder the device tool brings
# back, at most 8 files; ./gpu_out elsewhere) gets two: summary.md (that table) and
# gpu_check_logs.tar.gz (every step's log).
# With no device it says so within seconds: the test binaries still run (they skip), nothing
# else does. Exit status: 0 every check passed, or no device; 1 a check failed, timed out, or
# (with a device) skipped all its tests.
# Environment: SIXND_GPU_BIN (folders to look for the binaries in, ':'-separated, before the
# staged and build-gpu ones), SIXND_GPU_BATCH (GPT-2 batch, default 16).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu_out}
BATCH=${SIXND_GPU_BATCH:-16}
SEQ_LENS=1024,2048,4096
mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/sixnd_gpu_check.XXXXXX)
: >"$LOGS/steps.tsv"

# name:seconds, in the order the steps run.
LIMITS=(probe:10 gpu_ops_test:30 gpu_attention_test:35 gpu_train_test:20 memcheck:30 racecheck:40
        attention_sixnd:25 attention_torch:30 gpt2_sixnd_none:15 gpt2_sixnd_selective:15
        gpt2_sixnd_full:15 gpt2_torch:90)
BUDGET=0
for l in "${LIMITS[@]}"; do BUDGET=$((BUDGET + ${l#*:})); done
echo "gpu_check: time budget ${BUDGET} s in all (${LIMITS[*]})"
START=$(date +%s)
DEADLINE=$((START + BUDGET))

limit_of() {
    local l
    for l in "${LIMITS[@]}"; do [[ ${l%%:*} == "$1" ]] && { echo "${l#*:}"; return; }; done
    echo 0
}
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$LOGS/steps.tsv"; }
skip() { record "$1" "skipped: $2" 0 "$(limit_of "$1")"; echo "== $1: skipped ($2)"; }

# step NAME LOG CMD...: CMD under the step's limit (cut to what is left of the budget), output to
# $LOGS/LOG; records ok, failed (rc N) or timeout.
step() {
    local name=$1 log=$2
    shift 2
    local limit left t0 rc status
    limit=$(limit_of "$name")
    left=$((DEADLINE - $(date +%s)))
    ((left < limit)) && limit=$left
    if ((limit < 3)); then skip "$name" "time budget spent"; return 0; fi
    t0=$(date +%s)
    timeout -k 2 "$limit" "$@" >"$LOGS/$log" 2>&1
    rc=$?
    if ((rc == 124 || rc == 137)); then status="timeout"
    elif ((rc == 0)); then status="ok"
    else status="failed (rc $rc)"; fi
    record "$name" "$status" $(($(date +%s) - t0)) "$limit"
    echo "== $name: $status, $(($(date +%s) - t0)) s of $limit s -> $log"
}

# The binaries: SIXND_GPU_BIN, then the staged folder (bin/ beside this script's folder, or
# build-gpu/stage/bin), then the build-gpu tree.
find_bin() {
    local d dirs
    IFS=: read -r -a dirs <<<"${SIXND_GPU_BIN:-}"
    dirs+=("$HERE/bin" "$HERE/build-gpu/stage/bin" "$HERE/build-gpu/tests" "$HERE/build-gpu/bench")
    for d in "${dirs[@]}"; do
        [[ -n $d && -x $d/$1 && -f $d/$1 ]] && { echo "$d/$1"; return 0; }
    done
    return 1
}
find_peer() {
    local d
    for d in "$HERE/bench" "$HERE/build-gpu/stage/bench"; do [[ -f $d/$1 ]] && { echo "$d/$1"; return 0; }; done
    return 1
}

probe() {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi -L
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    else
        echo "nvidia-smi: not found"
    fi
    local lt
    lt=$(ldconfig -p 2>/dev/null | grep -m1 -o '/[^ ]*libcublasLt\.so\.13$')
    if [[ -z $lt ]]; then
        # Not in the loader's cache: the CUDA toolkit's folders, then PyTorch's wheels (bounded search).
        lt=$(find /usr/local /opt /usr/lib /usr/lib64 -maxdepth 10 -name 'libcublasLt.so.13' 2>/dev/null | head -1)
    fi
    echo "cublaslt: ${lt:-not found}"
    command -v python3 >/dev/null && echo "python3: $(command -v python3)"
}

PROBE_LIMIT=$(limit_of probe)
t0=$(date +%s)
export -f probe
timeout -k 2 "$PROBE_LIMIT" bash -c probe >"$LOGS/probe.log" 2>&1
rc=$?
record probe "$([[ $rc == 0 ]] && echo ok || echo "failed (rc $rc)")" $(($(date +%s) - t0)) "$PROBE_LIMIT"

NO_DEVICE=""
if ! grep -q '^GPU [0-9]' "$LOGS/probe.log" && ! [[ -e /dev/nvidia0 ]]; then
    if command -v nvidia-smi >/dev/null; then NO_DEVICE="nvidia-smi lists no GPU and there is no /dev/nvidia0"
    else NO_DEVICE="no nvidia-smi and no /dev/nvidia0 on this machine"; fi
fi
GPU=$(grep -m1 '^GPU 0:' "$LOGS/probe.log" | sed 's/^GPU 0: //; s/ (UUID.*//')
echo "== probe: ${GPU:-no GPU} (${NO_DEVICE:-device present}) -> probe.log"
LT=$(sed -n 's/^cublaslt: \(\/.*\)$/\1/p' "$LOGS/probe.log")
if [[ -n $LT ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.13 '; then
    export LD_LIBRARY_PATH="$(dirname "$LT")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# --- the gpu tests, run directly (no ctest: nothing here depends on the CMake that built them)
for t in gpu_ops_test gpu_attention_test gpu_train_test; do
    if b=$(find_bin "$t"); then step "$t" "$t.log" "$b" --gtest_color=no
    else skip "$t" "not built (cmake --build --preset gpu, then scripts/gpu_stage.sh)"; fi
done

if [[ -n $NO_DEVICE ]]; then
    for s in memcheck racecheck attention_sixnd attention_torch gpt2_sixnd_none gpt2_sixnd_selective \
             gpt2_sixnd_full gpt2_torch; do
        skip "$s" "no device"
    done
else
    # --- compute-sanitizer on two attention shapes (head dims 64 and 128, T not a tile multiple;
    #     the second multi-query, so the dK/dV kernel walks a group of query heads)
    SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
    ATT=$(find_bin gpu_attention_test)
    FILTER='*FlashVsNaive*B2_T100_NH3_NKV3_hs64:*FlashVsNaive*B3_T130_NH4_NKV1_hs128'
    if [[ -n $SAN && -n $ATT ]]; then
        step memcheck memcheck.log "$SAN" --tool memcheck --error-exitcode 3 --print-limit 20 "$ATT" \
            --gtest_color=no --gtest_filter="$FILTER"
        step racecheck racecheck.log "$SAN" --tool racecheck --error-exitcode 3 --print-limit 20 "$ATT" \
            --gtest_color=no --gtest_filter="$FILTER"
    else
        skip memcheck "no compute-sanitizer or no gpu_attention_test"
        skip racecheck "no compute-sanitizer or no gpu_attention_test"
    fi

    # --- attention: sixnd's flash kernels, then PyTorch's flash SDPA, same shapes
    if b=$(find_bin attention_bench); then step attention_sixnd attention_sixnd.md "$b" --seq-lens "$SEQ_LENS"
    else skip attention_sixnd "attention_bench not built"; fi
    if p=$(find_peer torch_attention.py); then
        step attention_torch attention_torch.md env PYTHONUNBUFFERED=1 python3 "$p" --seq-lens "$SEQ_LENS"
    else skip attention_torch "bench/torch_attention.py not found"; fi

    # --- GPT-2 124M training steps, T=1024, bf16: sixnd per recompute policy, then PyTorch
    PEAK=""
    if b=$(find_bin model_bench); then
        for policy in none selective full; do
            step "gpt2_sixnd_$policy" "gpt2_sixnd_$policy.log" "$b" --shape gpt2-124m --dtype bf16 --mode train \
                --batch "$BATCH" --seq-len 1024 --recompute "$policy" --attention flash --device cuda \
                --warmup 3 --iters 10
            [[ -z $PEAK ]] && PEAK=$(grep -m1 -o '"peak_tflops":[0-9.eE+-]*' "$LOGS/gpt2_sixnd_$policy.log" | cut -d: -f2)
        done
    else
        for policy in none selective full; do skip "gpt2_sixnd_$policy" "model_bench not built"; done
    fi
    if p=$(find_peer torch_gpt2.py); then
        step gpt2_torch gpt2_torch.log env PYTHONUNBUFFERED=1 python3 "$p" --shape gpt2-124m --device cuda \
            --dtype bf16 --mode train --batch "$BATCH" --seq-len 1024 --warmup 3 --iters 10 --also-compile \
            ${PEAK:+--peak-tflops "$PEAK"}
    else skip gpt2_torch "bench/torch_gpt2.py not found"; fi
fi

# --- the table ------------------------------------------------------------------------------
python3 "$(dirname "$0")/gpu_table.py" --out "$LOGS" --budget "$BUDGET" --elapsed $(($(date +%s) - START)) \
    --batch "$BATCH" --seq-lens "$SEQ_LENS" --gpu "${GPU:-}" ${NO_DEVICE:+--no-device "$NO_DEVICE"}
rc=$?
cp "$LOGS/summary.md" "$OUT/summary.md"
tar -czf "$OUT/gpu_check_logs.tar.gz" -C "$LOGS" .
rm -rf "$LOGS"
exit $rc
