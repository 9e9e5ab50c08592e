#!/usr/bin/env bash
# The main job, end to end on real text: set up, build, train a byte-level BPE tokenizer on
# Debian's fortunes, turn the fortunes into filtered, deduplicated token shards, train a small
# GPT on them (on the GPU when one is present, else the CPU) with progress, print samples,
# and say where the run log and checkpoint are.
#   SIXND_RUN=DIR   run directory (default runs/fortunes)
#   SIXND_STEPS=N   training steps (default sized for about 3 minutes of training on a 2-core CPU,
#                   by how its BF16 matmuls run (core/cpu_features.h, bf16_matmul_native): 600 on
#                   BF16 dot products (AMX, or AVX512-BF16 on AMD), 400 on AVX-512 FP32 FMAs, 300
#                   on AVX2 FMAs (an AVX2-only CPU, or SIXND_CPU_ISA=avx2), at roughly 4,000,
#                   2,200 and 1,500 tokens/s)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

RUN=${SIXND_RUN:-runs/fortunes}
FORTUNES=/usr/share/games/fortunes
JOBS=$(nproc)

DEVICE=cpu
CUDA=OFF
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  DEVICE=cuda
  CUDA=ON
fi

echo "== build (release, CUDA $CUDA) ==" >&2
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIXND_CUDA=$CUDA >/dev/null
cmake --build build -j"$JOBS" --target sixnd
SIXND=build/sixnd
mkdir -p "$RUN"

# Fortune files are the ones without an extension (*.dat are indexes, *.u8 links).
mapfile -t TEXTS < <(find "$FORTUNES" -maxdepth 1 -type f ! -name '*.*' | sort)
echo "== tokenizer: byte-level BPE, 4096 tokens, on ${#TEXTS[@]} fortune files ==" >&2
$SIXND tokenizer train --input "${TEXTS[@]}" --vocab-size 4096 --special '<|endoftext|>' --out "$RUN/tokenizer.bin"

echo "== data: fortunes -> filtered, deduplicated token shards ==" >&2
# Fortunes are short: the Gopher word-count floor and the per-document language ID are
# tuned for web pages, so they are relaxed here; everything else runs at its default.
$SIXND data prepare --source "fortunes=$FORTUNES" --format fortune --tokenizer "$RUN/tokenizer.bin" \
  --out "$RUN/data" --overwrite --min-words 3 --min-stop-words 0 --no-langid --no-repetition --val-fraction 0.02

STEPS=${SIXND_STEPS:-}
if [ -z "$STEPS" ]; then
  if [ "$DEVICE" = cuda ]; then
    STEPS=2000
  elif [ "${SIXND_CPU_ISA:-native}" = native ] && { grep -qw amx_bf16 /proc/cpuinfo ||
       { grep -qw avx512_bf16 /proc/cpuinfo && grep -qw AuthenticAMD /proc/cpuinfo; }; }; then
    STEPS=600
  elif [ "${SIXND_CPU_ISA:-native}" != avx2 ] && grep -qw avx512f /proc/cpuinfo; then
    STEPS=400
  else
    STEPS=300
  fi
fi
rm -rf "$RUN/checkpoints" "$RUN/run.jsonl"
echo "== train: d6 preset (6 layers, 384 channels) with the 4096-token vocabulary, $STEPS steps on $DEVICE ==" >&2
$SIXND train --init random --model d6 --vocab-size 4096 --max-seq-len 256 --device "$DEVICE" --dtype bf16 \
  --train-data "$RUN/data/manifest.json" --val-data "$RUN/data/manifest.json:val" --tokenizer "$RUN/tokenizer.bin" \
  --batch 8 --seq-len 128 --steps "$STEPS" --lr 2e-3 --warmup 30 --schedule cosine --final-lr-frac 0.1 \
  --weight-decay 0.1 --grad-clip 1.0 --eval-every 100 --eval-batches 8 \
  --out "$RUN" --checkpoint-every 200 --keep-last 2 --log "$RUN/run.jsonl" > "$RUN/train_summary.json"
CKPT=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['checkpoint'])" "$RUN/train_summary.json")

echo "== samples ==" >&2
for prompt in "The meaning of life is" "Q: Why did the programmer" "A computer"; do
  echo "--- prompt: $prompt"
  $SIXND sample --checkpoint "$CKPT" --prompt "$prompt" --max-tokens 60 --temperature 0.8 --top-k 40 --seed 7
done

echo
echo "run log:     $RUN/run.jsonl"
echo "checkpoint:  $CKPT"
echo "data:        $RUN/data (manifest.json says what each stage removed)"
echo "summary:     $(cat "$RUN/train_summary.json")"
