#!/usr/bin/env bash
# Tokenizer benchmarks, side by side in one run:
#   1. BPE training, sixnd vs sentencepiece (spm_train --model_type=bpe), same file, same
#      vocabulary sizes, same thread count; wall and CPU seconds, peak memory, and the bytes per
#      token each vocabulary gives on held-out text (the fixtures' corpus.en).
#   2. GPT-2 encoding throughput (imported from the fixtures' vocab.json/merges.txt), one thread
#      and all cores, best of three, written to an llm.c shard.
# Usage: bench_tokenizer.sh [SIXND_BIN] [RESULTS_MD]   (env: VOCABS="8192 32768", WORK=dir, REUSE=1)
set -euo pipefail
. "$(dirname "$0")/../own_process_group.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/sixnd}
results=${2:-$root/bench/results/tokenizer.md}
fixtures=${SIXND_SHARED:-$root/../shared}/fixtures/tokenizer
vocabs=${VOCABS:-"8192 32768"}
# nproc takes OMP_NUM_THREADS as the thread count, which the CPUs line must not (it said "1 cores").
threads=$(nproc)
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
[ -x "$bin" ] || { echo "bench_tokenizer: $bin: no sixnd binary there (bench_tokenizer.sh SIXND_BIN)" >&2; exit 1; }
# A WORK directory is kept for REUSE=1; one of our own is removed (its corpus alone is 40 MB).
if [ -n "${WORK:-}" ]; then
  work=$WORK
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/sixnd-tokbench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi

command -v spm_train >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y sentencepiece >&2
corpus=$work/english.txt
[ -s "$corpus" ] || "$here/make_corpus.sh" "$corpus"
heldout=$fixtures/corpus.en
mb=$(python3 -c "print(round($(stat -c %s "$corpus") / 1e6, 1))")

# run_timed NAME CMD...: runs CMD, keeps "wall user sys maxrss_kb" in $work/NAME.time. With
# REUSE=1, a result already in $work is kept (sentencepiece at 32K takes many minutes) where it is
# what the note under the table says it is: measured today, by the same command (binary, vocabulary,
# thread count) on the same corpus, which $work/NAME.key records. Any result had been kept: one of
# another thread count sat in a table headed with this one.
run_timed() {
  local name=$1; shift
  local key
  key="$(stat -c '%s %Y' "$corpus") $*"
  if [ -n "${REUSE:-}" ] && [ -s "$work/$name.time" ] && [ "$(cat "$work/$name.key" 2>/dev/null)" = "$key" ] &&
     [ "$(date -u -r "$work/$name.time" +%F)" = "$(date -u +%F)" ]; then
    echo "reusing $work/$name.time" >&2
    reused+=("$name")
    return
  fi
  rm -f "$work/$name.key"
  # A failed command's times are not a result for REUSE=1 to keep.
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err" ||
    { local rc=$?; rm -f "$work/$name.time"; failed "$name" $rc "$work/$name.err"; }
  printf '%s\n' "$key" >"$work/$name.key"
}
# failed NAME STATUS LOG: the command's own error (its stderr went to LOG), and exit 1.
failed() {
  echo "bench_tokenizer: $1 failed (exit $2):" >&2
  tail -n 5 "$3" >&2
  exit 1
}
field() { awk -v k="$2" '{print $k}' "$work/$1.time"; }
cpu() { awk '{printf "%.1f", $2 + $3}' "$work/$1.time"; }
mem() { awk '{printf "%.0f", $4 / 1024}' "$work/$1.time"; }

reused=()
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "## Tokenizer"
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $cpus CPUs, $(free -g | awk '/Mem:/{print $2}') GB;"
  echo "load average at start: $load_before (shared machine: wall times include waiting for a"
  echo "core, CPU seconds do not). Corpus: Debian's fortunes + dict-gcide, $mb MB of English"
  echo "($(basename "$corpus"), built by bench/tokenizer/make_corpus.sh). sentencepiece $(dpkg-query -W -f '${Version}' sentencepiece 2>/dev/null || echo '?')."
  echo "Run: bench/tokenizer/bench_tokenizer.sh, $(date -u +%Y-%m-%d)."
  echo
  echo "### BPE training, same file, $threads threads each"
  echo
  echo "| vocab | trainer | wall s | CPU s | peak MB | bytes/token on corpus.en | wall speed-up | CPU speed-up |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|"
} >"$work/table.md"

for v in $vocabs; do
  run_timed "sixnd-$v" "$bin" tokenizer train --input "$corpus" --vocab-size "$v" --special '<|endoftext|>' \
    --heldout "$heldout" --threads "$threads" --out "$work/sixnd-$v.tok"
  sixnd_bpt=$(python3 -c "import json; print('%.3f' % json.loads(open('$work/sixnd-$v.out').read())['bytes_per_token'])")
  run_timed "spm-$v" spm_train --input="$corpus" --model_prefix="$work/spm-$v" --vocab_size="$v" \
    --model_type=bpe --num_threads="$threads"
  spm_tokens=$(spm_encode --model="$work/spm-$v.model" <"$heldout" | wc -w)
  spm_bpt=$(python3 -c "print('%.3f' % ($(stat -c %s "$heldout") / $spm_tokens))")
  speed_wall=$(python3 -c "print('%.1f×' % ($(field "spm-$v" 1) / $(field "sixnd-$v" 1)))")
  speed_cpu=$(python3 -c "print('%.1f×' % (($(cpu "spm-$v")) / max(0.05, $(cpu "sixnd-$v"))))")
  {
    echo "| $v | sixnd | $(field "sixnd-$v" 1) | $(cpu "sixnd-$v") | $(mem "sixnd-$v") | $sixnd_bpt | **$speed_wall** | **$speed_cpu** |"
    echo "| $v | spm_train --model_type=bpe | $(field "spm-$v" 1) | $(cpu "spm-$v") | $(mem "spm-$v") | $spm_bpt | 1× | 1× |"
  } >>"$work/table.md"
done

"$bin" tokenizer import-gpt2 --vocab "$fixtures/gpt2_vocab.json" --merges "$fixtures/gpt2_merges.txt" \
  --out "$work/gpt2.tok" 2>"$work/import.err" || failed "tokenizer import-gpt2" $? "$work/import.err"
{
  echo
  echo "### GPT-2 encoding ($mb MB English to an llm.c shard, best of 3)"
  echo
  echo "| threads | encode s | MB/s | whole command wall s | MB/s per CPU second | tokens | vs tiktoken's ~6 MB/s |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
} >>"$work/table.md"
for t in 1 "$threads"; do
  best=""
  for rep in 1 2 3; do
    run_timed "enc-$t-$rep" "$bin" tokenizer encode --tokenizer "$work/gpt2.tok" --input "$corpus" \
      --out "$work/enc-$t.bin" --threads "$t"
    # The encoder's own timer: reading, encoding and writing, not loading the tokenizer.
    sed -n 's/.* tokens in \([0-9.]*\) s .*/\1/p' "$work/enc-$t-$rep.err" >"$work/enc-$t-$rep.secs"
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $(cat "$work/enc-$t-$rep.secs") < $(cat "$work/$best.secs") else 1)"; then
      best="enc-$t-$rep"
    fi
  done
  tokens=$(python3 -c "import struct; print(struct.unpack('<3i', open('$work/enc-$t.bin','rb').read(12))[2])")
  bytes=$(stat -c %s "$corpus")
  python3 - "$t" "$(cat "$work/$best.secs")" "$(field "$best" 1)" "$(cpu "$best")" "$bytes" "$tokens" >>"$work/table.md" <<'PY'
import sys
t, secs, wall, cpu = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
nbytes, tokens = int(sys.argv[5]), int(sys.argv[6])
mbs = nbytes / 1e6 / secs
print(f"| {t} | {secs:.2f} | **{mbs:.1f}** | {wall:.2f} | {nbytes / 1e6 / max(cpu, 0.01):.1f} | {tokens} | {mbs / 6:.1f}× |")
PY
done
cmp -s "$work/enc-1.bin" "$work/enc-$threads.bin" || echo "WARNING: 1-thread and $threads-thread shards differ" >&2
{
  echo
  echo "tiktoken cannot be installed here (no PyPI), so the last column compares with the"
  echo "single-thread rate OpenAI publishes for tiktoken (about 6 MB/s), not a side-by-side run."
  echo "Encode seconds are the encoder's own timer (read, encode, write the shard; not loading the"
  echo "tokenizer file); the whole command's wall time and CPU seconds come from /usr/bin/time."
  echo "Training times are the whole command (count, merge, write the file, encode the held-out"
  echo "text), from /usr/bin/time."
  if [ ${#reused[@]} -gt 0 ]; then
    echo "Rows ${reused[*]} were measured earlier the same day, same file, machine and flags"
    echo "(REUSE=1 kept them rather than re-running)."
  fi
} >>"$work/table.md"
mkdir -p "$(dirname "$results")"
# Whole or not at all: a benchmark stopped while writing leaves the earlier results.
cp "$work/table.md" "$results.partial"
mv "$results.partial" "$results"
cat "$results"
