#!/usr/bin/env bash
# scripts/emulated_avx2_check.sh's arguments, on a copy whose setup.sh is a stand-in that leaves a
# mark and stops it: anything but none or `--cpu MODEL` (a word after the model, which used to be
# ignored, or `--cpu` alone) gets the usage line and exit 2 before set-up runs; through a link to
# it, it sets up its own checkout; Ctrl-C or SIGTERM
# while the emulated test binaries run stops them and the script (SIGTERM to the script left them
# running).
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_emulated_args_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/scripts"
cp "$SRC/scripts/emulated_avx2_check.sh" "$SRC/scripts/avx2_path_tests.sh" "$T/repo/scripts/"
printf 'touch "$(dirname "$0")/../setup_ran"\nexit 1\n' >"$T/repo/scripts/setup.sh"

for args in "--cpu EPYC-Rome-v2 extra" "--cpu" "--cpu=EPYC-Rome-v2" "EPYC-Rome-v2"; do
    read -r -a a <<<"$args"
    rm -f "$T/repo/setup_ran"
    out=$(bash "$T/repo/scripts/emulated_avx2_check.sh" "${a[@]}" 2>&1)
    rc=$?
    echo "emulated_avx2_check.sh $args: exit $rc: $out"
    ((rc == 2)) && [[ $(wc -l <<<"$out") == 1 && $out == usage:* ]] || fail "'$args': not the usage line with exit 2"
    [[ ! -e $T/repo/setup_ran ]] || fail "'$args': set-up ran"
done
rm -f "$T/repo/setup_ran"
bash "$T/repo/scripts/emulated_avx2_check.sh" --cpu EPYC-Rome-v2 >/dev/null 2>&1
[[ -e $T/repo/setup_ran ]] || fail "'--cpu EPYC-Rome-v2' was refused"
# Through a link to it: set-up is its checkout's (it looked for scripts/ beside the link).
mkdir -p "$T/links" && ln -s "$T/repo/scripts/emulated_avx2_check.sh" "$T/links/"
rm -f "$T/repo/setup_ran"
bash "$T/links/emulated_avx2_check.sh" >/dev/null 2>&1
[[ -e $T/repo/setup_ran ]] || fail "through a link: its checkout's set-up did not run"

# A signal while the test binaries run stops them, and the script, at once: Ctrl-C (SIGINT to the
# process group) and SIGTERM to the script alone (which ended the script and left the emulated
# binaries, minutes each, running). Stand-ins: set-up and cmake do nothing, and the emulator runs
# /bin/true but leaves its pid in started/ and sleeps for every test binary.
echo 'exit 0' >"$T/repo/scripts/setup.sh"
mkdir -p "$T/bin" "$T/repo/tests/model"
cp "$SRC"/tests/model/cpu_*_test.cpp "$T/repo/tests/model/"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/cmake"
printf '#!/bin/bash\n[ "$3" = /bin/true ] && exit 0\necho $$ >"%s/started/$$"\nexec sleep 60\n' "$T" >"$T/bin/qemu-x86_64"
chmod +x "$T/bin/cmake" "$T/bin/qemu-x86_64"
# Running: a process that ended but that no one reaps (its parent gone, in a container whose
# init does not reap) is still there for kill -0.
running() { [[ $(ps -o stat= -p "$1") == [^Z]* ]]; }
for how in "Ctrl-C:INT:-" "SIGTERM to the script:TERM:"; do
    IFS=: read -r name sig group <<<"$how"
    rm -rf "$T/started" && mkdir -p "$T/started"
    (cd "$T" && exec env PATH="$T/bin:$PATH" setsid bash "$T/repo/scripts/emulated_avx2_check.sh") >"$T/out" 2>&1 &
    pid=$!
    for ((i = 0; i < 300; i++)); do [[ -n $(ls "$T/started") ]] && break; sleep 0.1; done
    [[ -n $(ls "$T/started") ]] || { kill -KILL -- "-$pid"; fail "no stand-in test binary started: $(cat "$T/out")"; }
    kill -s "$sig" -- "$group$pid"
    for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    left=()
    for f in "$T"/started/*; do running "$(cat "$f")" && left+=("$(cat "$f")"); done
    ((${#left[@]} == 0)) || kill -KILL "${left[@]}"
    kill -0 "$pid" 2>/dev/null && { kill -KILL -- "-$pid"; fail "$name: the script ran on"; }
    ((${#left[@]} == 0)) || fail "$name: ${#left[@]} test binaries ran on after the script ended"
    wait "$pid"
    rc=$?
    echo "$name while the test binaries run: exit $rc, none left running"
    want=143
    [[ $sig == INT ]] && want=130
    ((rc == want)) || fail "$name: exit $rc (expected $want)"
done

echo "all passed"
