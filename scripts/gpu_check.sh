#!/usr/bin/env bash
# The one script run on a lent GPU (DESIGN.md, "Building and the GPU"; README.md, "Running the
# GPU check on a lent device").
#   here:  cmake --preset gpu && cmake --build --preset gpu && scripts/gpu_stage.sh
#   there: bash scripts/gpu_check.sh          (repository root, build-gpu/stage carried)
#      or: bash build-gpu/stage/scripts/gpu_check.sh
# Steps, in order of value, each under its own time limit; the limits of the steps chosen add up
# to the budget printed first (at most 380 s for all of them), and no step runs past that budget:
#   probe (OS, glibc, nvidia-smi and the driver; where libcublasLt.so.13 and libnccl.so.2 are, and
#   whether a binary loads) -> the gpu test binaries, run directly with CUDA_LAUNCH_BLOCKING=1, and
#   gpu_nccl_test without it (NCCL at one rank: each collective, and the tiny model trained
#   through it at ZeRO stages 0-3 against the one-process and CPU runs) -> compute-sanitizer
#   memcheck and racecheck (the flash kernels only) on two attention shapes -> the attention
#   benchmark and PyTorch's flash SDPA (head dims 64, 128; T 1k, 2k, 4k) -> GPT-2 124M training
#   steps, one per recompute policy, and PyTorch eager and torch.compile at the same batch.
# The output ends with one table (scripts/gpu_table.py). $OUT (the folder the device tool brings
# back, at most 8 files; ./gpu_out elsewhere) gets two: summary.md (that table) and
# gpu_check_logs.tar.gz (every step's log). Both are rewritten after every step, and the logs
# every 10 s during one, so a call cut short still brings back what it measured; each step's key
# numbers are printed as it ends.
# With no device it says so within seconds: the test binaries still run (they skip), nothing
# else does. Exit status: 0 every check passed, or no device; 1 a check failed, timed out, or
# (with a device) skipped all its tests; 2 an argument given, SIXND_GPU_STEPS naming an unknown
# step, a bad SIXND_GPU_BATCH, or an OUT it cannot write.
# Environment:
#   SIXND_GPU_STEPS  the steps to run, space- or comma-separated: names from LIMITS below, or the
#                    groups tests, sanitizers, attention, gpt2 (default: all). The probe always
#                    runs. The budget is the sum of the chosen steps' limits, e.g.
#                    SIXND_GPU_STEPS=tests -> 135 s, SIXND_GPU_STEPS=gpu_attention_test -> 45 s.
#   SIXND_GPU_BIN    folders to look for the binaries in, ':'-separated, before the staged and
#                    build-gpu ones.
#   SIXND_GPU_BATCH  GPT-2 batch, default 16.
set -u
# It takes no arguments: one given (a step's name, --help) ran every step, minutes of a lent device.
if (($# > 0)); then
    echo "usage: bash scripts/gpu_check.sh   (no arguments: steps are chosen with SIXND_GPU_STEPS, see the" \
         "script's header)" >&2
    exit 2
fi
HERE=$(cd "$(dirname "$0")/.." && pwd)
TABLE=$(cd "$(dirname "$0")" && pwd)/gpu_table.py
OUT=${OUT:-$PWD/gpu_out}
BATCH=${SIXND_GPU_BATCH:-16}
SEQ_LENS=1024,2048,4096

# name:seconds, in the order the steps run.
LIMITS=(probe:10 gpu_ops_test:30 gpu_attention_test:35 gpu_train_test:20 gpu_muon_test:15 gpu_nccl_test:25
        memcheck:30 racecheck:35 attention_sixnd:25 attention_torch:30 gpt2_sixnd_none:15 gpt2_sixnd_selective:15
        gpt2_sixnd_full:15 gpt2_torch:80)
TESTS=(gpu_ops_test gpu_attention_test gpu_train_test gpu_muon_test gpu_nccl_test)

limit_of() {
    local l
    for l in "${LIMITS[@]}"; do [[ ${l%%:*} == "$1" ]] && { echo "${l#*:}"; return; }; done
    echo 0
}

# --- which steps run (SIXND_GPU_STEPS), checked before anything else: a typo costs no device time
declare -A SELECTED=([probe]=1)
if [[ -z ${SIXND_GPU_STEPS:-} ]]; then
    for l in "${LIMITS[@]}"; do SELECTED[${l%%:*}]=1; done
else
    # Every line of it (a plain read stops at the first: the names after a newline went unchecked,
    # and unrun).
    read -r -d '' -a words <<<"${SIXND_GPU_STEPS//,/ }"
    if ((${#words[@]} == 0)); then
        echo "gpu_check: SIXND_GPU_STEPS='$SIXND_GPU_STEPS' names no step (unset it for all; 'probe' for the probe alone)" >&2
        exit 2
    fi
    for w in "${words[@]}"; do
        case $w in
            tests) names=("${TESTS[@]}") ;;
            sanitizers) names=(memcheck racecheck) ;;
            attention) names=(attention_sixnd attention_torch) ;;
            gpt2) names=(gpt2_sixnd_none gpt2_sixnd_selective gpt2_sixnd_full gpt2_torch) ;;
            *) names=("$w") ;;
        esac
        for n in "${names[@]}"; do
            if [[ $(limit_of "$n") == 0 ]]; then
                echo "gpu_check: SIXND_GPU_STEPS names '$n', which is no step; steps: ${LIMITS[*]%%:*};" \
                     "groups: tests sanitizers attention gpt2" >&2
                exit 2
            fi
            SELECTED[$n]=1
        done
    done
fi
selected() { [[ -n ${SELECTED[$1]:-} ]]; }
# The GPT-2 batch too: a typo would fail every gpt2 step and the table (device time lost).
if ! [[ $BATCH =~ ^[1-9][0-9]{0,4}$ ]]; then
    echo "gpu_check: SIXND_GPU_BATCH=$BATCH: expected a batch size, a whole number from 1" >&2
    exit 2
fi

# $OUT is what the call brings back: one that cannot be written is refused before any step (the
# check ran to its end, wrote nothing there, and exited 0).
if ! mkdir -p "$OUT" 2>/dev/null || [[ ! -d $OUT || ! -w $OUT ]]; then
    echo "gpu_check: OUT=$OUT: cannot write the summary and logs there (not a writable folder)" >&2
    exit 2
fi

BUDGET=0
CHOSEN=()
for l in "${LIMITS[@]}"; do
    selected "${l%%:*}" || continue
    BUDGET=$((BUDGET + ${l#*:}))
    CHOSEN+=("$l")
done
echo "gpu_check: time budget ${BUDGET} s in all (${CHOSEN[*]})"
START=$(date +%s)
DEADLINE=$((START + BUDGET))

# What an earlier run left in $OUT (./gpu_out here) must not pass for this one's, should it end early.
rm -f "$OUT/summary.md" "$OUT/gpu_check_logs.tar.gz"
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/sixnd_gpu_check.XXXXXX")
# A signal ends the step that runs (timeout puts it in a process group of its own, which Ctrl-C
# does not reach: it ran on to its limit) and the run; the folder goes however the run ends (bash
# ended by a signal it does not trap skips its EXIT trap, and left it behind).
STEP_PID=""
# shellcheck disable=SC2317  # run by the traps below
on_signal() {
    [[ -z $STEP_PID ]] || kill -TERM "$STEP_PID" 2>/dev/null
    exit "$1"
}
trap 'rm -rf "$LOGS"' EXIT
trap 'on_signal 129' HUP
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
: >"$LOGS/steps.tsv"

# Modes may not survive the transfer to the device machine; find_bin needs the x bit. Only files
# without it are touched (the binaries may be links into a build folder that is not ours).
for f in "$HERE"/bin/* "$HERE"/build-gpu/stage/bin/*; do
    [[ -f $f && ! -x $f ]] && chmod +x "$f" 2>/dev/null
done

record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$LOGS/steps.tsv"; }
for l in "${LIMITS[@]}"; do selected "${l%%:*}" || record "${l%%:*}" "not selected" 0 "${l#*:}"; done
skip() {
    selected "$1" || return 0
    record "$1" "skipped: $2" 0 "$(limit_of "$1")"
    echo "== $1: skipped ($2)"
}

# $OUT as it would be if the call ended now: the table so far and the logs. Each file is written
# beside its final name and renamed, so a kill mid-write leaves the previous one whole.
refresh_logs() {
    tar -czf "$OUT/gpu_check_logs.tar.gz.tmp" -C "$LOGS" . 2>/dev/null
    # tar's 1: a log grew while it was read (a step still running); the archive holds it as it was.
    (($? <= 1)) && mv -f "$OUT/gpu_check_logs.tar.gz.tmp" "$OUT/gpu_check_logs.tar.gz"
}
table() {
    python3 "$TABLE" --out "$LOGS" --budget "$BUDGET" --elapsed $(($(date +%s) - START)) --batch "$BATCH" \
        --seq-lens "$SEQ_LENS" --gpu "${GPU:-}" ${NO_DEVICE:+--no-device "$NO_DEVICE"} "$@"
}
# progress STEP [--quiet]: after STEP (or, quiet, as it starts), the summary so far into $OUT, and
# STEP's key numbers on stdout: the device tool returns only the output's last 12,000 characters.
progress() {
    table --progress "$@"
    [[ -f $LOGS/summary.md ]] && cp "$LOGS/summary.md" "$OUT/summary.md.tmp" &&
        mv -f "$OUT/summary.md.tmp" "$OUT/summary.md"
    refresh_logs
}

# What `timeout -k 2 LIMIT CMD` exiting with $1 means.
status_of() {
    if (($1 == 124 || $1 == 137)); then echo "timeout"
    elif (($1 == 0)); then echo "ok"
    else echo "failed (rc $1)"; fi
}

# step NAME LOG CMD...: CMD under the step's limit (cut to what is left of the budget), output to
# $LOGS/LOG; records ok, failed (rc N) or timeout, then refreshes $OUT and prints the key numbers.
step() {
    local name=$1 log=$2
    shift 2
    selected "$name" || return 0
    local limit left t0 status i
    limit=$(limit_of "$name")
    left=$((DEADLINE - $(date +%s)))
    ((left < limit)) && limit=$left
    if ((limit < 3)); then skip "$name" "time budget spent"; return 0; fi
    record "$name" running 0 "$limit"
    progress "$name" --quiet
    t0=$(date +%s)
    timeout -k 2 "$limit" "$@" >"$LOGS/$log" 2>&1 &
    STEP_PID=$!
    # The logs go to $OUT every 10 s meanwhile: a call cut short during a step still brings back
    # its output so far (a hung test's last "[ RUN ]" line names the case).
    for ((i = 1; ; i++)); do
        kill -0 "$STEP_PID" 2>/dev/null || break
        sleep 0.2
        ((i % 50 == 0)) && refresh_logs
    done
    wait "$STEP_PID"
    status=$(status_of $?)
    STEP_PID=""
    record "$name" "$status" $(($(date +%s) - t0)) "$limit"
    echo "== $name: $status, $(($(date +%s) - t0)) s of $limit s -> $log"
    progress "$name"
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

# find_lib SONAME SUBDIR...: "PATH (where)" of a shared library: where the loader looks anyway,
# then CUDA's usual folders, then the SUBDIRs of python3's package folders (PyTorch's wheels),
# then a bounded search; nothing when it is nowhere.
find_lib() {
    local so=$1 lt d sub
    shift
    lt=$(ldconfig -p 2>/dev/null | grep -m1 -o "/[^ ]*${so//./\\.}\$")
    [[ -n $lt ]] && { echo "$lt (loader cache)"; return; }
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
             /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/lib /usr/local/cuda-13*/targets/x86_64-linux/lib; do
        [[ -e $d/$so ]] && { echo "$d/$so (CUDA folder)"; return; }
    done
    if command -v python3 >/dev/null; then
        while IFS= read -r d; do
            for sub in "$@"; do
                [[ -e $d/$sub/$so ]] && { echo "$d/$sub/$so (python3's packages)"; return; }
            done
        done < <(timeout 10 python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + sys.path))' \
                     2>/dev/null)
    fi
    lt=$(timeout 20 find /usr/local /opt /usr/lib /usr/lib64 -maxdepth 10 -name "$so" 2>/dev/null | head -1)
    [[ -n $lt ]] && echo "$lt (search)"
}
# libcublasLt.so.13, which every binary loads (CUDA 13 has no static cuBLASLt). Outside the
# probe's limit, which a slow nvidia-smi can use up: without this library every binary fails to
# start and the call is lost.
find_cublaslt() { find_lib libcublasLt.so.13 nvidia/cu13/lib nvidia/cublas/lib; }
# libnccl.so.2, which gpu_nccl_test alone loads (PyTorch's nvidia-nccl-cu13 wheel has it).
find_nccl() { find_lib libnccl.so.2 nvidia/nccl/lib nvidia/cu13/lib; }

# shellcheck disable=SC2317  # run by `bash -c probe`, under the probe's time limit
probe() {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "os: $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"')"
    echo "glibc: $(ldd --version 2>&1 | head -1)"
    command -v python3 >/dev/null && echo "python3: $(command -v python3)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi -L
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/gpu: /'
    else
        echo "nvidia-smi: not found"
    fi
}

t0=$(date +%s)
LT=$(find_cublaslt)
NCCL=$(find_nccl)
export -f probe
timeout -k 2 "$(limit_of probe)" bash -c probe >"$LOGS/probe.log" 2>&1
rc=$?
echo "cublaslt: ${LT:-not found}" >>"$LOGS/probe.log"
echo "nccl: ${NCCL:-not found}" >>"$LOGS/probe.log"
NCCL=${NCCL%% (*}
LT=${LT%% (*}
if [[ -n $LT ]] && ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.13 '; then
    LD_LIBRARY_PATH="$(dirname "$LT")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
fi
# Whether a binary loads here at all (libcublasLt found, glibc new enough): one line, not 5 failures.
for b in "${TESTS[@]}" model_bench attention_bench; do
    if b=$(find_bin "$b"); then
        echo "ldd: $(basename "$b"): $(timeout 10 ldd "$b" 2>&1 | grep -E 'not found|cublasLt|not a dynamic' |
            tr -s ' \t' ' ' | sed 's/^ //' | paste -sd ';' -)" >>"$LOGS/probe.log"
        break
    fi
done
record probe "$(status_of "$rc")" $(($(date +%s) - t0)) "$(limit_of probe)"

NO_DEVICE=""
if ! grep -q '^GPU [0-9]' "$LOGS/probe.log" && ! [[ -e /dev/nvidia0 ]]; then
    if command -v nvidia-smi >/dev/null; then NO_DEVICE="nvidia-smi lists no GPU and there is no /dev/nvidia0"
    else NO_DEVICE="no nvidia-smi and no /dev/nvidia0 on this machine"; fi
fi
GPU=$(grep -m1 '^GPU 0:' "$LOGS/probe.log" | sed 's/^GPU 0: //; s/ (UUID.*//')
echo "== probe: ${GPU:-no GPU} (${NO_DEVICE:-device present}) -> probe.log"
progress probe

# --- the gpu tests, run directly (no ctest: nothing here depends on the CMake that built them).
#     CUDA_LAUNCH_BLOCKING=1: a faulting kernel is reported at its own launch, by name, instead of
#     at the next synchronisation; the tests are not timed, so it costs only seconds.
#     gpu_nccl_test runs without it: NCCL's collectives run on a stream of their own, and with
#     every launch blocking, its check of their order with the compute stream would prove nothing.
#     NCCL_DEBUG=INFO: how NCCL started (or why not) goes to its log.
for t in "${TESTS[@]}"; do
    if ! b=$(find_bin "$t"); then
        skip "$t" "not built (cmake --build --preset gpu, then scripts/gpu_stage.sh)"
    elif [[ $t != gpu_nccl_test ]]; then
        step "$t" "$t.log" env CUDA_LAUNCH_BLOCKING=1 "$b" --gtest_color=no
    elif [[ -n $NCCL ]]; then
        step "$t" "$t.log" env LD_LIBRARY_PATH="$(dirname "$NCCL")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            NCCL_DEBUG=INFO "$b" --gtest_color=no
    else
        skip "$t" "no libnccl.so.2 on this machine (python3 -m pip show nvidia-nccl-cu13)"
    fi
done

if [[ -n $NO_DEVICE ]]; then
    for s in memcheck racecheck attention_sixnd attention_torch gpt2_sixnd_none gpt2_sixnd_selective \
             gpt2_sixnd_full gpt2_torch; do
        skip "$s" "no device"
    done
else
    # --- compute-sanitizer on two attention shapes (head dims 64 and 128, T not a tile multiple;
    #     the second multi-query, so the dK/dV kernel walks a group of query heads)
    SAN=$(command -v compute-sanitizer)
    for f in /usr/local/cuda*/bin/compute-sanitizer; do [[ -z $SAN && -x $f ]] && SAN=$f; done
    ATT=$(find_bin gpu_attention_test)
    FILTER='*FlashVsNaive*B2_T100_NH3_NKV3_hs64:*FlashVsNaive*B3_T130_NH4_NKV1_hs128'
    if [[ -n $SAN && -n $ATT ]]; then
        # racecheck looks at sixnd's flash kernels only: the naive path these cases compare with
        # runs cuBLASLt's GEMMs, whose shared-memory use is not ours to answer for and whose
        # instrumentation costs most of the step's time. memcheck still covers every kernel (a bad
        # argument of ours can fault inside cuBLASLt). NVIDIA's Compute Sanitizer manual
        # (docs.nvidia.com/compute-sanitizer/ComputeSanitizer, "Command Line Options" and
        # "Specifying Filters"): "kernel-name | {key1=val1}[{,key2=val2}] | Controls which
        # application kernels will be checked"; key "kernel_substring, kns | Any substring in
        # mangled kernel name"; "If a filter is incorrectly specified in any component, the entire
        # filter is ignored." (The option was --kernel-regex before Compute Sanitizer 2023.3, so
        # the help text decides.) "flash_attention" is in every flash kernel's name, mangled or not;
        # tests/gpu/gpu_check_test.sh checks that the built binary still has such kernels.
        RACE_ONLY=()
        if timeout 10 "$SAN" --help 2>&1 | grep -q -- '--kernel-name'; then
            RACE_ONLY=(--kernel-name kns=flash_attention)
            echo "racecheck kernels: flash_attention" >>"$LOGS/probe.log"
        else
            echo "racecheck kernels: all ($SAN --help names no --kernel-name)" >>"$LOGS/probe.log"
        fi
        step memcheck memcheck.log "$SAN" --tool memcheck --error-exitcode 3 --print-limit 20 "$ATT" \
            --gtest_color=no --gtest_filter="$FILTER"
        step racecheck racecheck.log "$SAN" --tool racecheck "${RACE_ONLY[@]}" --error-exitcode 3 \
            --print-limit 20 "$ATT" --gtest_color=no --gtest_filter="$FILTER"
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
            [[ -z $PEAK && -f $LOGS/gpt2_sixnd_$policy.log ]] &&
                PEAK=$(grep -m1 -o '"peak_tflops":[0-9.eE+-]*' "$LOGS/gpt2_sixnd_$policy.log" | cut -d: -f2)
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
table
rc=$?
cp "$LOGS/summary.md" "$OUT/summary.md"
refresh_logs
exit $rc
