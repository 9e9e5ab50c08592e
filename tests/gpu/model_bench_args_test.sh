#!/usr/bin/env bash
# bench/model/model_bench refuses a mode, batch, length or step count it cannot run, with one line
# naming the flag, before it builds a model (a typo'd --mode used to time forward+backward, and
# --iters 0 printed tokens_per_s null). Here among the gpu tests because test.sh runs those against
# the CUDA build, which has the benchmarks (its ASan build then has none); without nvcc they run
# against the ASan build, which then has them. Skips (77) where the build has no benchmarks.
set -u
BENCH=${SIXND_BUILD:-build}/bench/model_bench
if [ ! -x "$BENCH" ]; then
  echo "skipped: $BENCH is not built (SIXND_BENCH=OFF)"
  exit 77
fi
fail=0
refused() {
  local words=$1
  shift
  local out rc
  out=$("$BENCH" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] || ! grep -q -- "$words" <<<"$out"; then
    echo "FAIL model_bench $*: exit $rc, output: ${out:0:300}"
    fail=1
  else
    echo "ok   model_bench $*"
  fi
}
refused "--mode: foo not in" --mode foo
refused "--iters: Value 0 not in range 1" --iters 0
refused "--batch: Value -1 not in range 1" --batch -1
refused "--seq-len: Value 0 not in range 1" --seq-len 0
refused "--warmup: Value -2 not in range 0" --warmup -2
exit $fail
