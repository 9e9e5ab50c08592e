#!/usr/bin/env bash
# scripts/run.sh's setup stage, on a copy of run.sh whose setup.sh and cmake are stand-ins:
# 1. run from a terminal, setup reads the terminal as sudo does for its password, and gets the
#    line typed there (it used to run in a process group of its own, which that read stopped:
#    run.sh then waited for ever, and Ctrl-C could not end it);
# 2. Ctrl-C during setup ends run.sh with one line naming setup, exit 130;
# 3. SIGTERM sent to run.sh alone during setup ends it once setup has, naming setup, exit 143.
# Skips (77) without script(1), which gives the run a terminal.
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v script >/dev/null || { echo "skipped: needs script(1) (util-linux)"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_run_sh_tty_XXXXXX)
# What a hung run leaves (run.sh, and setup stopped by its read) is ended by pid.
cleanup() {
    local pid
    for pid in $(cat "$T"/*.pid 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/repo/scripts" "$T/bin"
cp "$SRC/scripts/run.sh" "$SRC/scripts/cpu_isa_check.sh" "$T/repo/scripts/"
# setup.sh: MODE=tty reads a line from the terminal; MODE=sleep waits, then succeeds.
cat >"$T/repo/scripts/setup.sh" <<'STUB'
echo $$ >"$T/setup.pid"
if [ "$MODE" = tty ]; then
    printf '[sudo] password: ' >/dev/tty
    read -r line </dev/tty
    echo "$line" >"$T/typed"
else
    touch "$T/setup_started"
    sleep 3
fi
STUB
# cmake: the build fails at once, so that run.sh ends right after setup.
printf '#!/bin/sh\nexit 3\n' >"$T/bin/cmake"
chmod +x "$T/bin/cmake"
export T PATH="$T/bin:$PATH" SIXND_RUN="$T/run"
unset SIXND_STEPS

# --- 1. a password typed at the terminal reaches setup
cat >"$T/drive.sh" <<'DRIVE'
echo $$ >"$T/run.pid"
exec bash "$T/repo/scripts/run.sh" 2>"$T/err"
DRIVE
{ sleep 2; echo secret; } | MODE="tty" timeout 20 script -qfec "bash $T/drive.sh" /dev/null >"$T/tty_out" 2>&1
rc=$?
echo "from a terminal: exit $rc; setup read '$(cat "$T/typed" 2>/dev/null)'; stderr: $(tail -1 "$T/err")"
[[ $(cat "$T/typed" 2>/dev/null) == secret ]] || fail "setup did not get the line typed at the terminal"
((rc != 124)) || fail "run.sh hung in setup"
[[ $(tail -1 "$T/err") == "run.sh: the build (configure) failed (exit 3)"* ]] || fail "run.sh did not go on to the build"
rm -f "$T"/*.pid

# run.sh in a process group of its own (job control: a script's background job would start with
# SIGINT ignored, which run.sh could not trap), its pid in $pid.
start_sleeping() {
    set -m
    MODE="sleep" bash "$T/repo/scripts/run.sh" 2>"$T/err" &
    pid=$!
    set +m
}

# --- 2. Ctrl-C (SIGINT to run.sh's process group) during setup
wait_started() {
    local _
    for _ in $(seq 100); do [[ -e $T/setup_started ]] && return 0; sleep 0.1; done
    fail "setup did not start"
}
start_sleeping
echo "$pid" >"$T/run.pid"
wait_started
kill -INT -- "-$pid"
wait "$pid"
rc=$?
echo "Ctrl-C in setup: exit $rc: $(tail -1 "$T/err")"
((rc == 130)) || fail "exit $rc after Ctrl-C in setup (expected 130)"
[[ $(tail -1 "$T/err") == "run.sh: interrupted by SIGINT during setup" ]] || fail "the last line does not name setup"
rm -f "$T/setup_started" "$T"/*.pid

# --- 3. SIGTERM to run.sh alone during setup
start_sleeping
echo "$pid" >"$T/run.pid"
wait_started
kill -TERM "$pid"
wait "$pid"
rc=$?
echo "SIGTERM to run.sh in setup: exit $rc: $(tail -1 "$T/err")"
((rc == 143)) || fail "exit $rc after SIGTERM in setup (expected 143)"
[[ $(tail -1 "$T/err") == "run.sh: interrupted by SIGTERM during setup" ]] || fail "the last line does not name setup"
echo "all passed"
