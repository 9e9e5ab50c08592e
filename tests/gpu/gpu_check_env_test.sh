#!/usr/bin/env bash
# scripts/gpu_check.sh's environment, checked before any device time is spent:
# 1. a SIXND_GPU_BATCH that is not a batch size (abc, 0, -1, "8 8") stops it at once, exit 2, one
#    line naming it (it used to fail every gpt2 step and then the table itself, leaving no summary);
# 2. a SIXND_GPU_STEPS that names nothing (" ", ",") stops it likewise (it used to run the probe
#    alone: a device call spent on nothing), and so do an argument (it took none, and ran every
#    step whatever was given) and an OUT it cannot write (it ran on, wrote nothing there, exit 0);
# 3. without a device and without the staged binaries the verdict says no test binary ran (it
#    used to say they "started and skipped");
# 4. Ctrl-C during a step ends that step's program (it ran on to the step's limit, in the process
#    group timeout makes) and leaves no log folder in TMPDIR (it used to).
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

# An argument (a step's name, as one might guess): refused at once, nothing run or written (every
# step used to run: minutes of a lent device).
for a in gpu_attention_test --help; do
    rm -rf "$T/out" && mkdir -p "$T/out"
    (cd "$T" && env OUT="$T/out" SIXND_GPU_BIN="" timeout 60 bash "$T/stage/scripts/gpu_check.sh" "$a") >"$T/log" 2>&1
    rc=$?
    echo "argument '$a': exit $rc: $(cat "$T/log")"
    ((rc == 2)) && [[ $(wc -l <"$T/log") == 1 ]] && grep -q "no arguments: steps are chosen with SIXND_GPU_STEPS" "$T/log" ||
        fail "argument '$a': exit $rc, expected 2 and one line saying so"
    [[ -z $(ls "$T/out") ]] || fail "argument '$a': it wrote $(ls "$T/out")"
done

# An OUT it cannot write (here a file): refused at once (it ran every step, wrote nothing, exit 0).
: >"$T/file"
(cd "$T" && env -u SIXND_GPU_STEPS -u SIXND_GPU_BATCH OUT="$T/file/out" SIXND_GPU_BIN="" timeout 60 \
    bash "$T/stage/scripts/gpu_check.sh") >"$T/log" 2>&1
rc=$?
echo "OUT=$T/file/out: exit $rc: $(cat "$T/log")"
((rc == 2)) && [[ $(wc -l <"$T/log") == 1 ]] && grep -q "OUT=$T/file/out: cannot write" "$T/log" ||
    fail "an OUT that cannot be written: exit $rc, expected 2 and one line naming it"

run SIXND_GPU_STEPS=tests
grep '^result' "$T/log"
((rc == 0)) || fail "no device, no binaries: exit $rc (expected 0: there is no device to fail on)"
grep -q '^result: NO DEVICE: .*no test binary ran: skipped: not built' "$T/log" ||
    fail "the verdict does not say that no test binary ran"
! grep -q 'started and skipped' "$T/log" || fail "the verdict claims the binaries started"
# 4. Ctrl-C during a step: its log folder goes too (it was left in TMPDIR).
mkdir -p "$T/tmp" "$T/bin"
printf '#!/bin/sh\necho $$ >"%s/started"\nexec sleep 60\n' "$T" >"$T/bin/gpu_ops_test"
chmod +x "$T/bin/gpu_ops_test"
rm -rf "$T/out" && mkdir -p "$T/out"
(cd "$T" && exec env -u SIXND_GPU_BATCH TMPDIR="$T/tmp" OUT="$T/out" SIXND_GPU_BIN="$T/bin" SIXND_GPU_STEPS=gpu_ops_test \
    setsid bash "$T/stage/scripts/gpu_check.sh") >"$T/log" 2>&1 &
pid=$!
for ((i = 0; i < 300; i++)); do [[ -e $T/started ]] && break; sleep 0.1; done
[[ -e $T/started ]] || { kill -KILL -- "-$pid"; fail "the stand-in gpu_ops_test did not start: $(cat "$T/log")"; }
kill -INT -- "-$pid"
wait "$pid"
rc=$?
echo "Ctrl-C during gpu_ops_test: exit $rc, TMPDIR holds: $(ls "$T/tmp")"
((rc == 130)) || fail "Ctrl-C: exit $rc (expected 130)"
[[ -z $(ls "$T/tmp") ]] || fail "Ctrl-C: the log folder $(ls "$T/tmp") was left behind"
# Running: a process that ended but that no one reaps (its parent gone, in a container whose
# init does not reap) is still there for kill -0.
running() { [[ $(ps -o stat= -p "$1") == [^Z]* ]]; }
test_pid=$(cat "$T/started")
for ((i = 0; i < 100; i++)); do running "$test_pid" || break; sleep 0.1; done
running "$test_pid" && { kill -KILL "$test_pid"; fail "Ctrl-C: the step's test binary runs on"; }

echo "all passed"
