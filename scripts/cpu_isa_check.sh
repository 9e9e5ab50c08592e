#!/usr/bin/env bash
# SIXND_CPU_ISA's values (core/cpu_features.cpp refuses any other, but only once sixnd runs):
# run.sh and test.sh check it before they install, build or delete anything.
# Usage: bash scripts/cpu_isa_check.sh NAME   (NAME leads the error line); exits 2 on a bad value.
case ${SIXND_CPU_ISA:-native} in
  native | avx512_core | avx2) ;;
  *) echo "$1: SIXND_CPU_ISA=$SIXND_CPU_ISA: expected native, avx512_core or avx2" >&2; exit 2 ;;
esac
