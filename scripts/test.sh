#!/usr/bin/env bash
# The whole test suite: set up, build the CPU code with AddressSanitizer + UBSan and run every
# test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

JOBS=$(nproc)
export OPENBLAS_CORETYPE=SkylakeX
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== build (CPU, ASan + UBSan) ==" >&2
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIXND_SANITIZE=ON -DSIXND_CUDA=OFF >/dev/null
cmake --build build-asan -j"$JOBS"

echo "== test ==" >&2
ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout 900
