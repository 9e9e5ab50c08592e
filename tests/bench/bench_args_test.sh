#!/usr/bin/env bash
# bench/model/matmul_bench refuses a token count, round count or model it cannot run, with one
# line naming the flag and a non-zero exit, before it allocates anything (--tokens 0 died of
# SIGFPE, a negative count of an uncaught length_error, --rounds 0 printed null times with exit 0,
# and a misspelt --model timed GPT-2's shapes); model_bench names --shape for a shape it does not
# know (it named train's --model), and a --dtype list naming one dtype twice (it ran two models of
# it, printing two results of one dtype); an unknown dtype, attention, recompute policy or device
# and a --seq-len past the shape's context are named too, and so are a --mode it does not know (it
# timed forward+backward) and an --iters, --batch, --seq-len or --warmup out of range (--iters 0
# printed tokens_per_s null). Skips (77) where the build has no benchmarks.
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
refused model_bench "model_bench: --dtype: names fp32 twice" --dtype fp32,fp32 --shape tiny --batch 1 --seq-len 8
refused model_bench "model_bench: --dtype: unknown dtype 'fp16'" --dtype fp16 --shape tiny
refused model_bench "model_bench: --attention: unknown attention 'foo'" --attention foo --shape tiny
refused model_bench "model_bench: --recompute: unknown policy 'foo'" --recompute foo --shape tiny
refused model_bench "model_bench: --device: unknown device 'foo'" --device foo --shape tiny
refused model_bench "model_bench: --seq-len: sequence length 300 exceeds the model's max_seq_len 256" --shape demo --seq-len 300
refused model_bench "--mode: foo not in" --mode foo
refused model_bench "--iters: Value 0 not in range 1" --iters 0
refused model_bench "--batch: Value -1 not in range 1" --batch -1
refused model_bench "--seq-len: Value 0 not in range 1" --seq-len 0
refused model_bench "--warmup: Value -2 not in range 0" --warmup -2
exit $fail
