#!/usr/bin/env bash
# scripts/gpu_check.sh's environment, checked before any device time is spent:
# 1. a SIXND_GPU_BATCH that is not a batch size (abc, 0, -1, "8 8") stops it at once, exit 2, one
#    line naming it (it used to fail every gpt2 step and then the table itself, leaving no summary);
# 2. a SIXND_GPU_STEPS that names nothing (" ", ",") stops it likewise (it used to run the probe
#    alone: a device call spent on nothing);
# 3. without a device and without the staged binaries the verdict says no test binary ran (it
#    used to say they "started and skipped").
# Skips (77) where a GPU is present (3 would be the real check there).
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
if [[ -e /dev/nvidia0 ]] || { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
    echo "skipped: a GPU is present"
    exit 77
fi
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_gpu_check_env_XXXXXX)
trap 'rm -rf "$T"' EXIT
# The staged layout with no binaries in it.
mkdir -p "$T/stage/scripts" "$T/stage/bench"
cp "$SRC/scripts/gpu_check.sh" "$SRC/scripts/gpu_table.py" "$T/stage/scripts/"
cp "$SRC/bench/torch_attention.py" "$SRC/bench/torch_gpt2.py" "$T/stage/bench/"
run() {  # run VAR=VALUE...: output in $T/log, exit status in rc
    rm -rf "$T/out" && mkdir -p "$T/out"
    (cd "$T" && env -u SIXND_GPU_STEPS -u SIXND_GPU_BATCH OUT="$T/out" SIXND_GPU_BIN="" "$@" \
        timeout 60 bash "$T/stage/scripts/gpu_check.sh") >"$T/log" 2>&1
    rc=$?
}

for v in abc 0 -1 "8 8"; do
    run SIXND_GPU_BATCH="$v"
    echo "SIXND_GPU_BATCH='$v': exit $rc: $(cat "$T/log")"
    ((rc == 2)) || fail "SIXND_GPU_BATCH='$v': exit $rc (expected 2)"
    [[ $(wc -l <"$T/log") == 1 ]] && grep -q "SIXND_GPU_BATCH=$v" "$T/log" ||
        fail "SIXND_GPU_BATCH='$v': not one line naming it"
    [[ -z $(ls "$T/out") ]] || fail "SIXND_GPU_BATCH='$v': it wrote $(ls "$T/out")"
done
for v in " " ","; do
    run SIXND_GPU_STEPS="$v"
    echo "SIXND_GPU_STEPS='$v': exit $rc: $(cat "$T/log")"
    ((rc == 2)) && [[ $(wc -l <"$T/log") == 1 ]] && grep -q "names no step" "$T/log" ||
        fail "SIXND_GPU_STEPS='$v': exit $rc, expected 2 and one line"
done

run SIXND_GPU_STEPS=tests
grep '^result' "$T/log"
((rc == 0)) || fail "no device, no binaries: exit $rc (expected 0: there is no device to fail on)"
grep -q '^result: NO DEVICE: .*no test binary ran: skipped: not built' "$T/log" ||
    fail "the verdict does not say that no test binary ran"
! grep -q 'started and skipped' "$T/log" || fail "the verdict claims the binaries started"
echo "all passed"
