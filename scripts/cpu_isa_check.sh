#!/usr/bin/env bash
# The CPU kernel switches' values (core/cpu_features.cpp refuses any other, but only once sixnd
# runs: a whole build, tokenizer and shards later): run.sh and test.sh check them before they
# install, build or delete anything.
# Usage: bash scripts/cpu_isa_check.sh NAME   (NAME leads the error line); exits 2 on a bad value.
case ${SIXND_CPU_ISA:-native} in
  native | avx512_core | avx2) ;;
  *) echo "$1: SIXND_CPU_ISA=$SIXND_CPU_ISA: expected native, avx512_core or avx2" >&2; exit 2 ;;
esac
case ${SIXND_BF16_MATMUL:-auto} in
  auto | bf16 | fp32) ;;
  *) echo "$1: SIXND_BF16_MATMUL=$SIXND_BF16_MATMUL: expected auto, bf16 or fp32" >&2; exit 2 ;;
esac
# Either cap takes the BF16 dot products away, whatever the CPU (whether a native one has them is
# sixnd's to say).
if [ "${SIXND_BF16_MATMUL:-}" = bf16 ] && [ "${SIXND_CPU_ISA:-native}" != native ]; then
  echo "$1: SIXND_BF16_MATMUL=bf16 needs BF16 dot products, which SIXND_CPU_ISA=$SIXND_CPU_ISA takes away" >&2
  exit 2
fi
