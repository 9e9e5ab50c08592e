#!/usr/bin/env bash
# The main job, end to end on real text: set up, build, train a byte-level BPE tokenizer on
# Debian's fortunes, turn the fortunes into filtered, deduplicated token shards, train a small
# GPT on them (on the GPU when one is present, else the CPU) with progress, print samples,
# and say where the run log and checkpoint are.
#   SIXND_RUN=DIR   run directory (default runs/fortunes in the repository; a relative DIR is taken
#                   from the directory run.sh is started in). It belongs to this script: a second
#                   run.sh, or a sixnd train, on it is refused before anything is touched. (run.sh
#                   of other run directories share the checkout's build/: they build it in turn.)
#   SIXND_STEPS=N   training steps, a whole number from 1 (default sized for about 3 minutes of
#                   training on a 2-core CPU, by how its BF16 matmuls run
#                   (core/cpu_features.h, bf16_matmul_native): 600 on
#                   BF16 dot products (AMX, or AVX512-BF16 on AMD; not under
#                   SIXND_BF16_MATMUL=fp32), 400 on AVX-512 FP32 FMAs, 300 on AVX2 FMAs (an
#                   AVX2-only CPU, or SIXND_CPU_ISA=avx2), at roughly 4,000, 2,200 and 1,500
#                   tokens/s)
# Both are checked before anything is installed, built or deleted, and so are SIXND_CPU_ISA and
# SIXND_BF16_MATMUL (scripts/cpu_isa_check.sh) and that build/ can be written. Each run starts
# afresh (a tokenizer, shards and a model of its own). SIGINT, SIGTERM and SIGHUP sent to run.sh reach the
# stage that runs (setup: see there; training ends with a checkpoint, and run.sh prints the
# command that continues it); a failure or an interruption ends with one line saying which stage,
# and a non-zero status.
set -euo pipefail

die() { echo "run.sh: $*" >&2; exit 1; }

STEPS=${SIXND_STEPS:-}
if [ -n "$STEPS" ] && ! [[ $STEPS =~ ^[1-9][0-9]{0,8}$ ]]; then
  echo "run.sh: SIXND_STEPS=$STEPS: expected a whole number of training steps, 1 or more" >&2
  exit 2
fi
# The checkout is the one this file is in, also when it is started through a link to it or to its
# folder (the link's folder held no cpu_isa_check.sh or setup.sh).
SCRIPTS=$(dirname "$(readlink -f -- "$0")")
bash "$SCRIPTS/cpu_isa_check.sh" run.sh || exit 2
# The run directory as the caller means it: relative to where run.sh was started.
RUN=${SIXND_RUN:-}
if [ -n "$RUN" ] && [[ $RUN != /* ]]; then RUN=$PWD/$RUN; fi
cd "$SCRIPTS/.."
ROOT=$PWD
RUN=${RUN:-$ROOT/runs/fortunes}
FORTUNES=/usr/share/games/fortunes
JOBS=$(nproc)

# --- the run directory: created, writable, and not in use (checked before any stage runs)
[ -d "$RUN" ] || [ ! -e "$RUN" ] || die "SIXND_RUN=$RUN exists and is not a directory"
mkdir -p -- "$RUN" 2>/dev/null || die "SIXND_RUN=$RUN: cannot create the run directory"
# Held while this script runs (and by its stages, which inherit it): one run.sh per directory.
{ exec 9>>"$RUN/.run_sh.lock"; } 2>/dev/null || die "SIXND_RUN=$RUN: the run directory is not writable"
flock -n 9 || die "$RUN is in use by another scripts/run.sh (or a stage one left running); wait for it or set SIXND_RUN to another directory"
# A sixnd train on it (started by hand, or one a killed run.sh left running) holds $RUN/.lock.
lock_rc=0
flock -n -E 75 "$RUN/.lock" true 2>/dev/null || lock_rc=$?
if [ "$lock_rc" = 75 ]; then
  die "$RUN is in use by a sixnd train (pid $(head -c 20 "$RUN/.lock" 2>/dev/null | tr -dc 0-9)); stop it or set SIXND_RUN to another directory"
fi
# A fresh run deletes the last one's texts/ (links to the fortune files), spikes/ (sixnd's spike
# reports), data/ (shards) and summary; a SIXND_RUN that holds something else under those names (a directory
# used for other things) is refused here, before any stage, instead of losing it.
not_ours() { die "SIXND_RUN=$RUN: $1 is not what an earlier run.sh left there ($2); remove it yourself or set SIXND_RUN to another directory"; }
if [ -e "$RUN/texts" ] || [ -L "$RUN/texts" ]; then
  { [ -d "$RUN/texts" ] && [ ! -L "$RUN/texts" ]; } || not_ours "$RUN/texts" "not a directory"
  [ -z "$(find "$RUN/texts" -mindepth 1 ! -type l -print -quit)" ] || not_ours "$RUN/texts" "it holds more than links"
fi
if [ -e "$RUN/spikes" ] || [ -L "$RUN/spikes" ]; then
  { [ -d "$RUN/spikes" ] && [ ! -L "$RUN/spikes" ]; } || not_ours "$RUN/spikes" "not a directory"
  [ -z "$(find "$RUN/spikes" -mindepth 1 ! \( -type f -name 'step-*.json*' \) -print -quit)" ] ||
    not_ours "$RUN/spikes" "it holds more than spike reports"
fi
# data/ is replaced by data prepare --overwrite, which refuses one it did not write, but only after
# the build and the tokenizer.
if [ -e "$RUN/data" ] || [ -L "$RUN/data" ]; then
  { [ -d "$RUN/data" ] && [ ! -L "$RUN/data" ]; } || not_ours "$RUN/data" "not a directory"
  if [ -n "$(ls -A -- "$RUN/data")" ]; then
    [ -f "$RUN/data/manifest.json" ] || not_ours "$RUN/data" "it holds no manifest.json"
    [ -z "$(find "$RUN/data" -mindepth 1 ! \( -type f \( -name manifest.json -o -name 'train_*.bin' -o -name 'val_*.bin' \) \) \
      -print -quit)" ] || not_ours "$RUN/data" "it holds more than shards and their manifest"
  fi
fi
if [ -d "$RUN/train_summary.json" ] && [ ! -L "$RUN/train_summary.json" ]; then
  not_ours "$RUN/train_summary.json" "a directory"
fi
# Training truncates run.jsonl, and refuses one that is no run log, or a checkpoints that is no
# directory, but only after the build, the tokenizer (replacing tokenizer.bin) and the shards.
if [ -e "$RUN/run.jsonl" ] || [ -L "$RUN/run.jsonl" ]; then
  [ -f "$RUN/run.jsonl" ] || not_ours "$RUN/run.jsonl" "not a file"
  first=""
  { IFS= read -r -n 1048576 first || true; } <"$RUN/run.jsonl"
  [ ! -s "$RUN/run.jsonl" ] || [[ $first == '{'*'"type":"header"'* ]] ||
    not_ours "$RUN/run.jsonl" "its first line is no sixnd run log header"
fi
if { [ -e "$RUN/checkpoints" ] || [ -L "$RUN/checkpoints" ]; } && [ ! -d "$RUN/checkpoints" ]; then
  not_ours "$RUN/checkpoints" "not a directory"
fi
# The build goes to the checkout's build/, and its lock beside it: a checkout where neither can be
# written (read-only) is refused here, not by mkdir's own error once set-up has run.
{ mkdir -p build && : >>build/.run_sh.lock; } 2>/dev/null ||
  die "$ROOT/build: cannot write the build directory there (a read-only checkout?); run.sh builds sixnd in it"

# --- stages: each in a process group of its own, so that a signal sent to run.sh (Ctrl-C in its
#     terminal, kill, a CI job's timeout) reaches the stage once, and run.sh waits for it to end
#     instead of leaving it running on its own.
CHILD=""
STAGE=""
SIGNAL=""
UNSENT=""
on_signal() {
  SIGNAL=${SIGNAL:-$1}
  if [ -n "$CHILD" ]; then kill -s "$1" -- "-$CHILD" 2>/dev/null || true; else UNSENT=$1; fi
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP
# Training's summary is written beside its name and moved there when training ends well; a run
# that stops on the way leaves no half of it.
trap 'rm -f -- "$RUN/train_summary.json.tmp"' EXIT
interrupted() {
  local n v kernels=""
  case $SIGNAL in INT) n=2 ;; HUP) n=1 ;; *) n=15 ;; esac
  # The CPU kernels the run trained on come from the environment, and a resume takes whichever it
  # finds: pasted into another shell, the command continued a SIXND_CPU_ISA=avx2 run natively.
  for v in SIXND_CPU_ISA SIXND_BF16_MATMUL; do
    [ -z "${!v:-}" ] || kernels+="$v=$(printf '%q' "${!v}") "
  done
  # This run's checkpoints only: newer than the summary's temporary file, made as training started
  # (a trainer stopped before its --overwrite removed the last run's leaves those, and the
  # command below would continue that run).
  if [ "$STAGE" = training ] && [ -n "$(find "$RUN/checkpoints" -mindepth 1 -maxdepth 1 -newer \
       "$RUN/train_summary.json.tmp" -print -quit 2>/dev/null)" ]; then
    echo "run.sh: interrupted by SIG$SIGNAL during $STAGE; its checkpoints are in $RUN/checkpoints." \
         "run.sh again starts a new run; to continue this one instead:" >&2
    echo "  cd $(printf '%q' "$ROOT") && $kernels$(printf '%q ' "${TRAIN[@]}")--resume latest" >&2
  else
    echo "run.sh: interrupted by SIG$SIGNAL during $STAGE" >&2
  fi
  exit $((128 + n))
}
# stage NAME CMD...: CMD with run.sh's signals forwarded to it; stops run.sh, naming NAME, when
# CMD fails or a signal came.
stage() {
  STAGE=$1
  shift
  [ -z "$SIGNAL" ] || interrupted
  set -m
  "$@" &
  CHILD=$!
  set +m
  # A signal that came while the stage was being started had no process group to reach (the
  # stage then ran to its end, a whole training run, before run.sh acted on it): it goes now.
  if [ -n "$UNSENT" ]; then
    kill -s "$UNSENT" -- "-$CHILD" 2>/dev/null || true
    UNSENT=""
  fi
  local rc
  while :; do
    wait "$CHILD" && rc=0 || rc=$?
    kill -0 "$CHILD" 2>/dev/null || break
  done
  CHILD=""
  stage_end "$rc"
}
# stage_end STATUS: stops run.sh, naming $STAGE, when it failed (STATUS) or a signal came.
stage_end() {
  [ -z "$SIGNAL" ] || interrupted
  if [ "$1" -ne 0 ]; then
    echo "run.sh: $STAGE failed (exit $1); run directory $RUN" >&2
    exit "$1"
  fi
}

# Setup runs in run.sh's own process group (in a terminal, the foreground one): sudo reads its
# password from the terminal, and a stage in a group of its own is stopped by that read (run.sh
# waited for ever). Ctrl-C reaches it; a signal sent to run.sh alone is acted on when it ends.
STAGE=setup
bash scripts/setup.sh && rc=0 || rc=$?
stage_end "$rc"

DEVICE=cpu
CUDA=OFF
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  # The CUDA kernels need compute capability 8.0 or newer; an older GPU (V100, T4) is no device
  # for them. An nvidia-smi too old to say leaves the choice to sixnd, which names the fault.
  caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null || true)
  if grep -q '^ *[0-7]\.' <<<"$caps"; then
    echo "run.sh: the GPU is compute capability $(tr '\n' ' ' <<<"$caps" | sed 's/ *$//'), and sixnd's CUDA kernels" \
         "need 8.0 or newer (A100, H100 and later); training on the CPU" >&2
  else
    DEVICE=cuda
    CUDA=ON
  fi
fi

echo "== build (release, CUDA $CUDA) ==" >&2
# build/ is the checkout's, whatever SIXND_RUN is: two run.sh building it at once would break it.
exec 8>>build/.run_sh.lock
if ! flock -n 8; then
  echo "run.sh: another scripts/run.sh is building $ROOT/build; waiting for it" >&2
  stage "the wait for the build directory" flock 8
fi
stage "the build (configure)" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIXND_CUDA=$CUDA >/dev/null
stage "the build" cmake --build build -j"$JOBS" --target sixnd
exec 8>&-
SIXND=$ROOT/build/sixnd

# Fortune files are the ones without an extension (*.dat are indexes, *.u8 links).
TEXTS=()
[ -d "$FORTUNES" ] && mapfile -t TEXTS < <(find "$FORTUNES" -maxdepth 1 -type f ! -name '*.*' | sort)
[ ${#TEXTS[@]} -gt 0 ] || die "no fortune files in $FORTUNES (Debian's fortunes package: apt-get install fortunes)"
echo "== tokenizer: byte-level BPE, 4096 tokens, on ${#TEXTS[@]} fortune files ==" >&2
stage "the tokenizer" "$SIXND" tokenizer train --input "${TEXTS[@]}" --vocab-size 4096 --special '<|endoftext|>' \
  --out "$RUN/tokenizer.bin"

echo "== data: fortunes -> filtered, deduplicated token shards ==" >&2
# The shards come from the files the tokenizer learnt from, no others: a source directory is
# read whole and recursively (the *.dat indexes, and fortunes-off's or fortunes-de's
# subdirectories where those packages are installed).
rm -rf "$RUN/texts" && mkdir -p "$RUN/texts" && ln -s "${TEXTS[@]}" "$RUN/texts/"
# Fortunes are short: the Gopher word-count floor and the per-document language ID are
# tuned for web pages, so they are relaxed here; everything else runs at its default.
stage "data preparation" "$SIXND" data prepare --source "fortunes=$RUN/texts" --format fortune \
  --tokenizer "$RUN/tokenizer.bin" --out "$RUN/data" --overwrite --min-words 3 --min-stop-words 0 --no-langid \
  --no-repetition --val-fraction 0.02

if [ -z "$STEPS" ]; then
  if [ "$DEVICE" = cuda ]; then
    STEPS=2000
  elif [ "${SIXND_CPU_ISA:-native}" = native ] && [ "${SIXND_BF16_MATMUL:-auto}" != fp32 ] &&
       { grep -qw amx_bf16 /proc/cpuinfo ||
       { grep -qw avx512_bf16 /proc/cpuinfo && grep -qw AuthenticAMD /proc/cpuinfo; }; }; then
    STEPS=600
  elif [ "${SIXND_CPU_ISA:-native}" != avx2 ] && grep -qw avx512f /proc/cpuinfo; then
    STEPS=400
  else
    STEPS=300
  fi
fi
# A fresh run: --overwrite deletes the previous run's checkpoints once train has checked its flags
# and locked the directory; its old run log and spike reports go too.
rm -rf "$RUN/spikes" "$RUN/train_summary.json"
echo "== train: d6 preset (6 layers, 384 channels) with the 4096-token vocabulary, $STEPS steps on $DEVICE ==" >&2
# Warm-up: 30 steps, or a tenth of a run shorter than 300 (30 outlasted a short SIXND_STEPS, and
# training warned of a --warmup the user never gave).
WARMUP=$((STEPS < 300 ? STEPS / 10 : 30))
TRAIN=("$SIXND" train --init random --model d6 --vocab-size 4096 --max-seq-len 256 --device "$DEVICE" --dtype bf16
  --train-data "$RUN/data/manifest.json" --val-data "$RUN/data/manifest.json:val" --tokenizer "$RUN/tokenizer.bin"
  --batch 8 --seq-len 128 --steps "$STEPS" --lr 2e-3 --warmup "$WARMUP" --schedule cosine --final-lr-frac 0.1
  --weight-decay 0.1 --grad-clip 1.0 --eval-every 100 --eval-batches 8
  --out "$RUN" --checkpoint-every 200 --keep-last 2 --log "$RUN/run.jsonl")
stage training "${TRAIN[@]}" --overwrite > "$RUN/train_summary.json.tmp"
mv -f "$RUN/train_summary.json.tmp" "$RUN/train_summary.json"
CKPT=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['checkpoint'])" "$RUN/train_summary.json")

echo "== samples ==" >&2
for prompt in "The meaning of life is" "Q: Why did the programmer" "A computer"; do
  echo "--- prompt: $prompt"
  stage sampling "$SIXND" sample --checkpoint "$CKPT" --prompt "$prompt" --max-tokens 60 --temperature 0.8 --top-k 40 --seed 7
done

echo
echo "run log:     $RUN/run.jsonl"
echo "checkpoint:  $CKPT"
echo "data:        $RUN/data (manifest.json says what each stage removed)"
echo "summary:     $(cat "$RUN/train_summary.json")"
