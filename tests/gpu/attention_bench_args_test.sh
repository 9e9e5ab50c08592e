#!/usr/bin/env bash
# bench/attention/attention_bench refuses flags it cannot run, with one line naming them, before it
# looks for a device: it said "skipped, no CUDA device" whatever the flags on a machine without
# one, so a typo in gpu_check.sh's call would first be seen on the lent GPU; a --seq-lens with no
# value was called an unknown argument. Among the gpu tests:
# only the CUDA build has attention_bench (model_bench's and matmul_bench's flags are
# tests/bench/bench_args_test.sh's). Skips (77) where it is not built.
set -u
BENCH=${SIXND_BUILD:-build}/bench/attention_bench
if [ ! -x "$BENCH" ]; then
  echo "skipped: $BENCH is not built (no CUDA, or SIXND_BENCH=OFF)"
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
    echo "FAIL attention_bench $*: exit $rc, output: ${out:0:300}"
    fail=1
  else
    echo "ok   attention_bench $*"
  fi
}
refused "--seq-lens: '100' is not a sequence length" --seq-lens 100
refused "--seq-lens: '' is not a sequence length" --seq-lens 1024,
refused "--seqlens: unknown argument" --seqlens 1024
refused "--seq-lens: needs a value" --seq-lens
exit $fail
