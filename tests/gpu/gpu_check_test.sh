#!/usr/bin/env bash
# scripts/gpu_check.sh on a machine without a GPU, laid out as the staged folder the device
# machine gets (scripts/gpu_stage.sh: bin/, scripts/, bench/):
# 1. as it is called there: it prints its time budget first (at most 380 s, the sum of its step
#    limits), finds and starts the gpu test binaries of this build (they skip every case), prints
#    each one's counts as it ends, says there is no device, ends with the table, and exits 0
#    within seconds, leaving two files in $OUT;
# 2. SIXND_GPU_STEPS: the budget is the chosen steps' limits, the others are "not selected", and
#    an unknown name stops it at once (exit 2), on a later line of the value too (it went unread);
# 3. on a made-up device (an nvidia-smi and test binaries of this test's own, first on PATH and
#    SIXND_GPU_BIN): the test binaries run with CUDA_LAUNCH_BLOCKING=1, the header names the
#    driver, the probe records the OS and glibc, and a binary the loader refuses shows its line;
#    gpu_nccl_test runs without CUDA_LAUNCH_BLOCKING, finds libnccl.so.2 (here a made-up one in a
#    python3 package folder, as PyTorch's wheel has it), and its per-stage lines are printed;
# 4. a call cut short (SIGKILL while a step hangs) still leaves in $OUT the summary so far and the
#    logs, the hanging step's output included;
# 5. racecheck's kernel filter (flash_attention) matches the flash kernels of this build.
# Skips (77) where a GPU is present: there the check is the real one, minutes long.
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${SIXND_BUILD:-}
if [[ -e /dev/nvidia0 ]] || { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    echo "skipped: a GPU is present; run scripts/gpu_check.sh itself"
    exit 77
fi
fail() { echo "FAILED: $*"; exit 1; }

T=$(mktemp -d /tmp/sixnd_gpu_check_XXXXXX)
HANG_PID=""
cleanup() {
    [[ -n $HANG_PID ]] && kill -KILL "$HANG_PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/stage/bin" "$T/stage/scripts" "$T/stage/bench" "$T/out"
cp "$SRC/scripts/gpu_check.sh" "$SRC/scripts/gpu_table.py" "$T/stage/scripts/"
cp "$SRC/bench/torch_attention.py" "$SRC/bench/torch_gpt2.py" "$T/stage/bench/"
TESTS=(gpu_ops_test gpu_attention_test gpu_train_test gpu_muon_test gpu_nccl_test)
built=0
for b in "${TESTS[@]/#/tests/}" bench/attention_bench bench/model_bench; do
    if [[ -n $BUILD && -x $BUILD/$b ]]; then
        ln -s "$BUILD/$b" "$T/stage/bin/"
        [[ $b == tests/* ]] && built=$((built + 1))
    fi
done
# check OUTDIR [ENV=VALUE...]: gpu_check.sh from the staged folder, output in $T/log, exit status in rc.
check() {
    local out=$1
    shift
    rm -rf "$out" && mkdir -p "$out"
    (cd "$T" && env -u SIXND_GPU_STEPS OUT="$out" SIXND_GPU_BIN="" "$@" bash "$T/stage/scripts/gpu_check.sh") \
        >"$T/log" 2>&1
    rc=$?
}

# --- 1. no device, every step ------------------------------------------------------------------
t0=$(date +%s)
check "$T/out"
dt=$(($(date +%s) - t0))
cat "$T/log"
((rc == 0)) || fail "exit status $rc with no device (expected 0)"
((dt <= 30)) || fail "took ${dt} s with no device (expected seconds)"

first=$(head -1 "$T/log")
[[ $first =~ ^gpu_check:\ time\ budget\ ([0-9]+)\ s\ in\ all\ \((.*)\)$ ]] ||
    fail "first line is not the budget: $first"
budget=${BASH_REMATCH[1]}
sum=0
for l in ${BASH_REMATCH[2]}; do sum=$((sum + ${l#*:})); done
((budget <= 380)) || fail "budget ${budget} s is over 380 s"
((sum == budget)) || fail "step limits add up to ${sum} s, the budget printed is ${budget} s"
[[ ${BASH_REMATCH[2]} == *gpu_muon_test:* ]] || fail "the budget has no gpu_muon_test step"
[[ ${BASH_REMATCH[2]} == *gpu_nccl_test:* ]] || fail "the budget has no gpu_nccl_test step"

grep -q '^result: NO DEVICE' "$T/log" || fail "no 'result: NO DEVICE' line"
grep -q '^| check | sixnd | PyTorch |' "$T/log" || fail "no table"
[[ $(tail -1 "$T/log") == "|"* ]] || fail "the output does not end with the table"
cmp -s <(sed -n '/^# sixnd gpu_check/,$p' "$T/log") "$T/out/summary.md" ||
    fail "summary.md differs from the table printed"
# The device tool brings back at most 8 files from $OUT: the check leaves two.
[[ $(find "$T/out" -mindepth 1 -printf '%f\n' | sort | paste -sd ' ') == "gpu_check_logs.tar.gz summary.md" ]] ||
    fail "\$OUT holds: $(find "$T/out" -mindepth 1 -printf '%f ')"
tar -tzf "$T/out/gpu_check_logs.tar.gz" | grep -q 'steps.tsv' || fail "the logs archive has no steps.tsv"
tar -xzf "$T/out/gpu_check_logs.tar.gz" -C "$T" ./probe.log || fail "the logs archive has no probe.log"
for key in os glibc cublaslt nccl; do grep -q "^$key: " "$T/probe.log" || fail "probe.log has no '$key:' line"; done

# Per binary: a build may hold some of them (scripts/test.sh's CUDA pass builds the ones it names).
for t in "${TESTS[@]}"; do
    row=$(grep "^| $t (cases) |" "$T/log") || fail "no row for $t"
    if [[ $t == gpu_nccl_test && $row == *"skipped: no libnccl.so.2"* ]]; then
        continue  # built elsewhere, and this machine has no NCCL
    elif [[ -e $T/stage/bin/$t ]]; then
        [[ $row =~ \|\ [0-9]+\ passed,\ 0\ failed,\ ([0-9]+)\ skipped ]] || fail "$t did not run cleanly: $row"
        ((BASH_REMATCH[1] > 0)) || fail "$t skipped nothing without a device: $row"
        # Its counts were printed as it ended, not only in the table at the end.
        grep -q "^   $t: [0-9]* passed, 0 failed" "$T/log" || fail "no key numbers printed after $t"
    else
        [[ $row == *"not built"* ]] || fail "$t is not built here, yet its row says: $row"
    fi
done

# --- 2. SIXND_GPU_STEPS -------------------------------------------------------------------------
check "$T/out2" SIXND_GPU_STEPS="gpu_muon_test,gpu_ops_test"
((rc == 0)) || { cat "$T/log"; fail "exit status $rc for two chosen steps"; }
[[ $(head -1 "$T/log") == "gpu_check: time budget 55 s in all (probe:10 gpu_ops_test:30 gpu_muon_test:15)" ]] ||
    fail "the budget of the chosen steps: $(head -1 "$T/log")"
grep -q '^steps: probe gpu_ops_test gpu_muon_test (SIXND_GPU_STEPS' "$T/out2/summary.md" ||
    fail "the summary does not name the chosen steps"
grep -q '^| gpu_attention_test (cases) | not selected |' "$T/out2/summary.md" || fail "a step not chosen ran, or failed"
grep -q '^== gpu_attention_test' "$T/log" && fail "gpu_attention_test was not chosen, yet it has a line"
check "$T/out3" SIXND_GPU_STEPS="tests gpu_bogus_test"
((rc == 2)) || fail "an unknown step name: exit status $rc (expected 2)"
grep -q "names 'gpu_bogus_test', which is no step" "$T/log" || fail "an unknown step name is not named: $(cat "$T/log")"
check "$T/out3" SIXND_GPU_STEPS=$'tests\ngpu_bogus_test'
((rc == 2)) || fail "an unknown step name on a second line: exit status $rc (expected 2)"

# --- 3. a made-up device ------------------------------------------------------------------------
FAKE=$T/fake
mkdir -p "$FAKE/path" "$FAKE/bin"
cat >"$FAKE/path/nvidia-smi" <<'EOF'
#!/usr/bin/env bash
case "$*" in
    -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;
    --query-gpu=*) echo "NVIDIA H200, 580.159.03, 143771 MiB, 1980 MHz" ;;
esac
EOF
# GoogleTest's output; a case fails unless the launches are blocking.
cat >"$FAKE/bin/gpu_ops_test" <<'EOF'
#!/usr/bin/env bash
echo "[==========] Running 2 tests from 1 test suite."
echo "[ RUN      ] CudaOps.Matmul"
echo "[       OK ] CudaOps.Matmul (3 ms)"
echo "[ RUN      ] CudaOps.LaunchBlocking"
if [[ ${CUDA_LAUNCH_BLOCKING:-} == 1 ]]; then echo "[       OK ] CudaOps.LaunchBlocking (1 ms)"
else echo "[  FAILED  ] CudaOps.LaunchBlocking (1 ms)"; exit 1; fi
EOF
# What the loader says when it finds no libcublasLt.so.13.
cat >"$FAKE/bin/gpu_muon_test" <<'EOF'
#!/usr/bin/env bash
echo "$0: error while loading shared libraries: libcublasLt.so.13: cannot open shared object file:" \
     "No such file or directory" >&2
exit 127
EOF
# A case that hangs: its pid for this test to end it, then a sleep in its place.
cat >"$FAKE/bin/gpu_attention_test" <<EOF
#!/usr/bin/env bash
echo "[==========] Running 1 test from 1 test suite."
echo "[ RUN      ] Shapes/FlashVsNaive.Hangs/B1_T64"
echo \$\$ >"$FAKE/hang.pid"
exec sleep 120
EOF
# NCCL's collectives are checked for their order with the compute stream: blocking launches
# would hide a fault, so the case fails under CUDA_LAUNCH_BLOCKING; and it needs libnccl.so.2.
cat >"$FAKE/bin/gpu_nccl_test" <<'EOF'
#!/usr/bin/env bash
echo "[==========] Running 2 tests from 1 test suite."
echo "[ RUN      ] NcclComm.OrderedWithTheComputeStream"
if [[ -z ${CUDA_LAUNCH_BLOCKING:-} ]]; then echo "[       OK ] NcclComm.OrderedWithTheComputeStream (5 ms)"
else echo "[  FAILED  ] NcclComm.OrderedWithTheComputeStream (5 ms)"; exit 1; fi
echo "[ RUN      ] NcclComm.ZeroStagesTrainLikeOneProcess"
found=""
IFS=: read -r -a dirs <<<"${LD_LIBRARY_PATH:-}"
for d in "${dirs[@]}"; do [[ -n $d && -e $d/libnccl.so.2 ]] && found=$d; done
if [[ -z $found ]] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
    echo "error while loading shared libraries: libnccl.so.2: cannot open shared object file"; exit 127
fi
for z in 0 1 2 3; do echo "nccl zero $z: loss 5.3 -> 2.1, max rel diff vs one process 0.00e+00 (tolerance 1e-2): PASS"; done
echo "[       OK ] NcclComm.ZeroStagesTrainLikeOneProcess (900 ms)"
EOF
mkdir -p "$FAKE/py/nvidia/nccl/lib"
: >"$FAKE/py/nvidia/nccl/lib/libnccl.so.2"
chmod +x "$FAKE"/path/* "$FAKE"/bin/*

rm -rf "$T/out4" && mkdir -p "$T/out4"
PATH="$FAKE/path:$PATH" PYTHONPATH="$FAKE/py" OUT="$T/out4" SIXND_GPU_BIN="$FAKE/bin" \
    SIXND_GPU_STEPS="gpu_ops_test gpu_muon_test gpu_nccl_test" bash "$T/stage/scripts/gpu_check.sh" >"$T/log" 2>&1
rc=$?
((rc == 1)) || { cat "$T/log"; fail "a binary that does not start must fail the run: exit status $rc"; }
grep -q '^== probe: NVIDIA H200 (device present)' "$T/log" ||
    fail "the made-up device was not found: $(head -3 "$T/log")"
head -1 "$T/out4/summary.md" | grep -q 'NVIDIA H200 (driver 580.159.03)' ||
    fail "the header does not name the driver: $(head -1 "$T/out4/summary.md")"
grep -q '^| gpu_ops_test (cases) | 2 passed, 0 failed, 0 skipped |' "$T/out4/summary.md" ||
    fail "the test binaries do not run with CUDA_LAUNCH_BLOCKING=1: $(grep gpu_ops_test "$T/out4/summary.md")"
grep -q '^failing: gpu_muon_test: did not start: .*: error while loading shared libraries: libcublasLt.so.13' \
    "$T/out4/summary.md" || fail "the loader's line is not in the summary: $(cat "$T/out4/summary.md")"
grep -q '^   gpu_muon_test: FAILED (RC 127): did not start: ' "$T/log" ||
    fail "the loader's line was not printed as the step ended"
tar -xzf "$T/out4/gpu_check_logs.tar.gz" -C "$T" ./probe.log || fail "no probe.log in the logs"
grep -q '^gpu: NVIDIA H200, 580.159.03' "$T/probe.log" || fail "probe.log has no driver line"
grep -q '^ldd: gpu_ops_test: ' "$T/probe.log" || fail "probe.log has no load check of a binary"
grep -q '^nccl: /.*libnccl\.so\.2 (' "$T/probe.log" || fail "probe.log does not say where libnccl.so.2 is: $(cat "$T/probe.log")"
grep -q '^| gpu_nccl_test (cases) | 2 passed, 0 failed, 0 skipped |' "$T/out4/summary.md" ||
    fail "gpu_nccl_test did not run without CUDA_LAUNCH_BLOCKING and with libnccl.so.2 found: $(grep gpu_nccl_test "$T/out4/summary.md")"
grep -q '^   nccl zero 3: .*: PASS$' "$T/log" || fail "gpu_nccl_test's per-stage lines were not printed as it ended"

# --- 4. a call cut short ------------------------------------------------------------------------
# gpu_check.sh in a session of its own, SIGKILLed while gpu_attention_test hangs: no trap, no
# last word, as when the device tool's limit ends a call.
rm -rf "$T/out5" && mkdir -p "$T/out5"
# Started directly (no subshell), so $! is setsid's pid, which it keeps as the session's leader.
# TMPDIR: the logs folder a killed run cannot remove is then this test's to remove.
PATH="$FAKE/path:$PATH" OUT="$T/out5" SIXND_GPU_BIN="$FAKE/bin" SIXND_GPU_STEPS="gpu_ops_test gpu_attention_test" \
    TMPDIR="$T" setsid bash "$T/stage/scripts/gpu_check.sh" >"$T/log5" 2>&1 &
sid=$!
# Until the logs in $OUT hold the hanging case's first line (the logs are refreshed every 10 s
# during a step), or 40 s.
for ((i = 0; i < 200; i++)); do
    [[ -s $FAKE/hang.pid ]] && tar -xzOf "$T/out5/gpu_check_logs.tar.gz" ./gpu_attention_test.log 2>/dev/null |
        grep -q 'RUN .*Hangs' && break
    sleep 0.2
done
{ kill -KILL -- -"$sid"; wait "$sid"; } 2>/dev/null  # (bash's "Killed" notice is no news here)
HANG_PID=$(cat "$FAKE/hang.pid" 2>/dev/null)
((i < 200)) || { cat "$T/log5"; fail "the hanging step's output never reached \$OUT"; }
grep -q '^   gpu_ops_test: 2 passed, 0 failed, 0 skipped' "$T/log5" ||
    fail "gpu_ops_test's counts were not printed as it ended"
grep -q '^result: INCOMPLETE: the call ended while gpu_attention_test ran' "$T/out5/summary.md" ||
    fail "the summary left by a call cut short: $(cat "$T/out5/summary.md")"
grep -q '^| gpu_ops_test (cases) | 2 passed, 0 failed, 0 skipped |' "$T/out5/summary.md" ||
    fail "the summary left by a call cut short lacks the step that ended before"
tar -xzOf "$T/out5/gpu_check_logs.tar.gz" ./gpu_ops_test.log | grep -q 'OK \] CudaOps.Matmul' ||
    fail "the logs left by a call cut short lack gpu_ops_test.log"

# --- 5. racecheck's filter ----------------------------------------------------------------------
# gpu_check.sh has racecheck check only kernels whose mangled name holds "flash_attention": each
# of the five flash kernels must (the names live in the fat binary, so a stripped binary has them).
kernels=skipped
if [[ -n $BUILD && -f $BUILD/tests/gpu_attention_test ]]; then
    grep -q 'kns=flash_attention' "$T/stage/scripts/gpu_check.sh" || fail "gpu_check.sh filters racecheck otherwise"
    for k in forward backward_preprocess backward_dq backward_dkdv dq_convert; do
        LC_ALL=C grep -a -q "_Z[A-Za-z0-9_]*flash_attention_${k}_kernel" "$BUILD/tests/gpu_attention_test" ||
            fail "no kernel flash_attention_${k}_kernel in gpu_attention_test: racecheck's filter would miss it"
    done
    kernels=matched
fi

echo "PASSED: no device said in ${dt} s, budget ${budget} s = the step limits, ${built} gpu test binaries found" \
     "and skipped; chosen steps and their budget; made-up device: launch blocking, driver, loader error," \
     "NCCL step;" \
     "a call cut short left its summary and logs; racecheck filter ${kernels}"
