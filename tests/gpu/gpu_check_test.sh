#!/usr/bin/env bash
# scripts/gpu_check.sh on a machine without a GPU, laid out as the staged folder the device
# machine gets (scripts/gpu_stage.sh: bin/, scripts/, bench/): it prints its time budget first
# (at most 360 s, the sum of its step limits), finds and starts the gpu test binaries of this
# build (they skip every case), says there is no device, ends with the table, and exits 0 within
# seconds, leaving two files in $OUT. Skips (77) where a GPU is present: there the check is the real one, minutes long.
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${SIXND_BUILD:-}
if [[ -e /dev/nvidia0 ]] || { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    echo "skipped: a GPU is present; run scripts/gpu_check.sh itself"
    exit 77
fi
fail() { echo "FAILED: $*"; exit 1; }

T=$(mktemp -d /tmp/sixnd_gpu_check_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/stage/bin" "$T/stage/scripts" "$T/stage/bench" "$T/out"
cp "$SRC/scripts/gpu_check.sh" "$SRC/scripts/gpu_table.py" "$T/stage/scripts/"
cp "$SRC/bench/torch_attention.py" "$SRC/bench/torch_gpt2.py" "$T/stage/bench/"
built=0
for b in tests/gpu_ops_test tests/gpu_attention_test tests/gpu_train_test bench/attention_bench bench/model_bench; do
    if [[ -n $BUILD && -x $BUILD/$b ]]; then
        ln -s "$BUILD/$b" "$T/stage/bin/"
        [[ $b == tests/* ]] && built=$((built + 1))
    fi
done

t0=$(date +%s)
(cd "$T" && OUT="$T/out" SIXND_GPU_BIN="" bash "$T/stage/scripts/gpu_check.sh") >"$T/log" 2>&1
rc=$?
dt=$(($(date +%s) - t0))
cat "$T/log"
((rc == 0)) || fail "exit status $rc with no device (expected 0)"
((dt <= 30)) || fail "took ${dt} s with no device (expected seconds)"

first=$(head -1 "$T/log")
[[ $first =~ ^gpu_check:\ time\ budget\ ([0-9]+)\ s\ in\ all\ \((.*)\)$ ]] || fail "first line is not the budget: $first"
budget=${BASH_REMATCH[1]}
sum=0
for l in ${BASH_REMATCH[2]}; do sum=$((sum + ${l#*:})); done
((budget <= 360)) || fail "budget ${budget} s is over 6 minutes"
((sum == budget)) || fail "step limits add up to ${sum} s, the budget printed is ${budget} s"

grep -q '^result: NO DEVICE' "$T/log" || fail "no 'result: NO DEVICE' line"
grep -q '^| check | sixnd | PyTorch |' "$T/log" || fail "no table"
[[ $(tail -1 "$T/log") == "|"* ]] || fail "the output does not end with the table"
cmp -s <(sed -n '/^# sixnd gpu_check/,$p' "$T/log") "$T/out/summary.md" || fail "summary.md differs from the table printed"
# The device tool brings back at most 8 files from $OUT: the check leaves two.
[[ $(ls "$T/out") == $'gpu_check_logs.tar.gz\nsummary.md' ]] || fail "\$OUT holds: $(ls "$T/out" | tr '\n' ' ')"
tar -tzf "$T/out/gpu_check_logs.tar.gz" | grep -q 'steps.tsv' || fail "the logs archive has no steps.tsv"

for t in gpu_ops_test gpu_attention_test gpu_train_test; do
    row=$(grep "^| $t (cases) |" "$T/log") || fail "no row for $t"
    if ((built == 3)); then
        [[ $row =~ \|\ [0-9]+\ passed,\ 0\ failed,\ ([0-9]+)\ skipped ]] || fail "$t did not run cleanly: $row"
        ((BASH_REMATCH[1] > 0)) || fail "$t skipped nothing without a device: $row"
    else
        [[ $row == *"not built"* ]] || fail "$t is not built here, yet its row says: $row"
    fi
done
echo "PASSED: no device said in ${dt} s, budget ${budget} s = the step limits, ${built} gpu test binaries found and skipped"
