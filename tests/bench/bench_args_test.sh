#!/usr/bin/env bash
# bench/model/matmul_bench refuses a token count, round count or model it cannot run, with one
# line naming the flag and a non-zero exit, before it allocates anything (--tokens 0 died of
# SIGFPE, a negative count of an uncaught length_error, --rounds 0 printed null times with exit 0,
# and a misspelt --model timed GPT-2's shapes); model_bench names --shape for a shape it does not
# know (it named train's --model). Skips (77) where the build has no benchmarks.
set -u
DIR=${SIXND_BUILD:-build}/bench
if [ ! -x "$DIR/matmul_bench" ] || [ ! -x "$DIR/model_bench" ]; then
  echo "skipped: $DIR/matmul_bench or model_bench is not built (SIXND_BENCH=OFF)"
  exit 77
fi
fail=0
# refused BENCH WORDS ARGS...: a non-zero exit (not a signal), WORDS in the output, no result.
refused() {
  local bench=$1 words=$2
  shift 2
  local out rc
  out=$(timeout 60 "$DIR/$bench" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -gt 128 ] || ! grep -q -- "$words" <<<"$out" || grep -q '_ms"' <<<"$out"; then
    echo "FAIL $bench $*: exit $rc, output: ${out:0:300}"
    fail=1
  else
    echo "ok   $bench $*: $(grep -- "$words" <<<"$out" | head -1)"
  fi
}
refused matmul_bench "--tokens: Value 0 not in range 1" --tokens 0
refused matmul_bench "--tokens: Value -4 not in range 1" --tokens -4
refused matmul_bench "--rounds: Value 0 not in range 1" --rounds 0 --tokens 1
refused matmul_bench "--model: nosuch not in" --model nosuch --tokens 1 --rounds 1
refused model_bench "model_bench: --shape: unknown preset 'nosuch'" --shape nosuch
exit $fail
