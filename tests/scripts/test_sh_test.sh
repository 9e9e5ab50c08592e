#!/usr/bin/env bash
# scripts/test.sh's passes, with stand-ins for setup.sh, nvcc, cmake and ctest (nothing is built
# or run): a pass whose tests fail no longer stops the passes after it (the whole CPU suite used
# to go untested when the gpu pass failed), the CPU pass still runs last, and the last line names
# the passes that failed, with exit 1, also when a later build fails and stops it (the build
# tool's error used to be the last line); with every pass green it exits 0. Ctrl-C during a pass
# stops test.sh there with 130 (ctest exits on it with a status of its own, and every Ctrl-C used
# to start the next pass). The AVX2 path pass runs unless the whole suite runs on that path
# (SIXND_CPU_ISA=avx2; native used to drop it); an unknown SIXND_CPU_ISA is refused before
# any build (every test used to fail on it), and so are an unknown SIXND_BF16_MATMUL and bf16
# under a cap; an inherited SIXND_BF16_MATMUL=bf16 stays out of the AVX2 passes (sixnd refuses it
# there: each of their tests failed). Started through a link to it or to its folder, it works in
# its checkout (it looked for scripts/ beside the link). Also that it exports only OMP_NUM_THREADS
# and the sanitizers' options (no OPENBLAS_*).
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_test_sh_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/scripts" "$T/repo/tests/model" "$T/bin"
cp "$SRC/scripts/test.sh" "$SRC/scripts/avx2_path_tests.sh" "$SRC/scripts/cpu_isa_check.sh" "$T/repo/scripts/"
cp "$SRC"/tests/model/cpu_*_test.cpp "$T/repo/tests/model/" 2>/dev/null
echo 'exit 0' >"$T/repo/scripts/setup.sh"
printf '#!/bin/sh\nexit 0\n' >"$T/bin/nvcc"
# cmake: fails the build whose arguments contain $FAIL_BUILD.
cat >"$T/bin/cmake" <<'STUB'
#!/bin/bash
[[ -n ${FAIL_BUILD:-} && "$* " == *"$FAIL_BUILD "* ]] && { echo "ninja: build stopped: subcommand failed." >&2; exit 1; }
exit 0
STUB
# ctest: logs each call with the environment a test would see; fails a pass whose arguments
# contain $FAIL_PASS.
cat >"$T/bin/ctest" <<'STUB'
#!/bin/bash
echo "ctest $* | ISA=${SIXND_CPU_ISA:-} BF16=${SIXND_BF16_MATMUL:-} OMP=${OMP_NUM_THREADS:-} OPENBLAS=$(env | grep -c '^OPENBLAS_')" >>"$LOG"
[[ -n $FAIL_PASS && "$* " == *"$FAIL_PASS "* ]] && exit 8
# Ctrl-C in the terminal reaches the whole process group; ctest then exits with a status of its
# own, not by the signal.
[[ -n $INT_PASS && "$* " == *"$INT_PASS "* ]] && { trap 'exit 8' INT; kill -INT 0; sleep 5; }
exit 0
STUB
chmod +x "$T/bin/"*

# [FAIL_BUILD=...] [BF16=SIXND_BF16_MATMUL] [SCRIPT=path to test.sh] run FAIL_PASS [INT_PASS [SIXND_CPU_ISA]]:
# output in $T/out, calls in $T/log, status in rc
run() {
    : >"$T/log"
    # A session of its own: the Ctrl-C stand-in signals its process group, not this script.
    env -u SIXND_CPU_ISA -u SIXND_BF16_MATMUL -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PATH="$T/bin:$PATH" LOG="$T/log" \
        FAIL_PASS="$1" INT_PASS="${2:-}" ${3:+SIXND_CPU_ISA=$3} ${BF16:+SIXND_BF16_MATMUL=$BF16} \
        setsid -w bash "${SCRIPT:-$T/repo/scripts/test.sh}" >"$T/out" 2>&1
    rc=$?
}

run "-L gpu"
cat "$T/log"
tail -1 "$T/out"
((rc == 1)) || fail "a failing gpu pass: exit $rc (expected 1)"
tail -1 "$T/log" | grep -q -- '--test-dir build-asan --output-on-failure' ||
    fail "the CPU pass did not run last after a failing gpu pass"
[[ $(tail -1 "$T/out") == "test.sh: tests failed in: gpu (build-cuda)" ]] || fail "the last line does not name the gpu pass"
! grep -q 'OPENBLAS=[1-9]' "$T/log" || fail "a pass ran with OPENBLAS_* set"

# A build that fails after a failed pass: the last line names both (it was the build tool's).
FAIL_BUILD="--build build-asan" run "-L gpu"
((rc == 1)) || fail "a failing CPU build: exit $rc (expected 1)"
[[ $(tail -1 "$T/out") == "test.sh: build failed: CPU (build-asan) (exit 1); the passes after it did not run; tests failed in: gpu (build-cuda)" ]] ||
    fail "a failing CPU build after a failing gpu pass: the last line does not name both ($(tail -1 "$T/out"))"
grep -q -- '--test-dir build-asan ' "$T/log" && fail "a failing CPU build: its passes ran"

run "-LE gpu"
((rc == 1)) || fail "a failing CPU pass: exit $rc (expected 1)"
[[ $(tail -1 "$T/out") == "test.sh: tests failed in: CPU (build-asan)" ]] || fail "the last line does not name the CPU pass"

run ""
((rc == 0)) || fail "every pass green: exit $rc (expected 0)"
! grep -q 'tests failed' "$T/out" || fail "every pass green, yet a failure line"
run "" "-L gpu"
((rc == 130)) || fail "Ctrl-C during the gpu pass: exit $rc (expected 130)"
(($(wc -l <"$T/log") == 1)) || fail "Ctrl-C during the gpu pass: the passes after it ran ($(cat "$T/log"))"
[[ $(tail -1 "$T/out") == "test.sh: interrupted by SIGINT; the passes after this one did not run" ]] ||
    fail "Ctrl-C: the last line does not say so ($(tail -1 "$T/out"))"

for isa in native avx512_core; do
    run "" "" "$isa"
    grep -q -- "-R ^(model.*| ISA=avx2 " "$T/log" || fail "SIXND_CPU_ISA=$isa: the AVX2 path pass did not run"
done
run "" "" avx2
! grep -q -- "-R ^(model" "$T/log" || fail "SIXND_CPU_ISA=avx2: the AVX2 path pass ran beside the whole suite on it"
run "" "" avx512
((rc == 2)) || fail "SIXND_CPU_ISA=avx512: exit $rc (expected 2, before any pass)"
[[ ! -s "$T/log" ]] || fail "SIXND_CPU_ISA=avx512: passes ran ($(cat "$T/log"))"
grep -q 'SIXND_CPU_ISA=avx512: expected native, avx512_core or avx2' "$T/out" || fail "SIXND_CPU_ISA=avx512: no error naming it"
BF16=fp16 run ""
((rc == 2)) && [[ ! -s "$T/log" ]] && grep -q 'SIXND_BF16_MATMUL=fp16: expected auto, bf16 or fp32' "$T/out" ||
    fail "SIXND_BF16_MATMUL=fp16: exit $rc, not refused before any pass with a line naming it ($(cat "$T/out"))"
BF16=bf16 run "" "" avx2
((rc == 2)) && [[ ! -s "$T/log" ]] && grep -q 'SIXND_BF16_MATMUL=bf16 needs BF16 dot products' "$T/out" ||
    fail "SIXND_BF16_MATMUL=bf16 under SIXND_CPU_ISA=avx2: exit $rc, not refused before any pass ($(cat "$T/out"))"

# SIXND_BF16_MATMUL=bf16 (a CPU with dot products, made to use them): the suite runs on them, and
# the AVX2 passes, whose cap sixnd refuses it under, run without it (each of their tests failed).
BF16=bf16 run ""
((rc == 0)) || fail "SIXND_BF16_MATMUL=bf16: exit $rc (expected 0)"
grep -q 'ISA=avx2 BF16=bf16' "$T/log" && fail "SIXND_BF16_MATMUL=bf16: an AVX2 pass ran with it ($(cat "$T/log"))"
tail -1 "$T/log" | grep -q -- '--test-dir build-asan .*| ISA= BF16=bf16 ' ||
    fail "SIXND_BF16_MATMUL=bf16: the CPU pass ran without it ($(tail -1 "$T/log"))"

# Started through a link to it, or to its folder: test.sh works in the checkout it is in.
mkdir -p "$T/links"
ln -s "$T/repo/scripts/test.sh" "$T/links/test.sh"
ln -s "$T/repo/scripts" "$T/links/sixnd_scripts"
for link in "$T/links/test.sh" "$T/links/sixnd_scripts/test.sh"; do
    SCRIPT=$link run ""
    ((rc == 0)) && grep -q -- '--test-dir build-asan ' "$T/log" || fail "through $link: exit $rc ($(tail -1 "$T/out"))"
done
echo "all passed"
