#!/usr/bin/env bash
# `sixnd tokenizer` end to end: import GPT-2 and encode the fixtures to tiktoken's ids, train the
# corpus.en reference, shard round trip, and bad input failing with one clear line.
set -uo pipefail
bin=${SIXND_BIN:-}
fixtures=${SIXND_SHARED:-$(dirname "$0")/../../../shared}/fixtures/tokenizer
[ -x "$bin" ] || { echo "skip: SIXND_BIN not set to the sixnd binary"; exit 77; }
[ -d "$fixtures" ] || { echo "skip: fixtures not found at $fixtures"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed to compare JSON"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error NAME PATTERN -- CMD...: CMD must exit 1 with exactly one stderr line matching PATTERN.
expect_error() {
  local name=$1 pattern=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 1 ]; then fail "$name: exit $rc, want 1"; fi
  if ! grep -q -- "$pattern" "$tmp/err"; then fail "$name: stderr lacks '$pattern': $(cat "$tmp/err")"; fi
  if [ "$(grep -c . "$tmp/err")" -ne 1 ]; then fail "$name: want one line on stderr, got: $(cat "$tmp/err")"; fi
}

"$bin" tokenizer import-gpt2 --vocab "$fixtures/gpt2_vocab.json" --merges "$fixtures/gpt2_merges.txt" \
  --out "$tmp/gpt2.tok" 2>/dev/null || fail "import-gpt2"

for name in address.txt german.txt tinystories_sample.txt corpus.en; do
  "$bin" tokenizer encode --tokenizer "$tmp/gpt2.tok" --input "$fixtures/$name" --out - >"$tmp/ids.json" 2>/dev/null \
    || fail "encode $name"
  python3 - "$fixtures/gpt2-expected-ids.json" "$name" "$tmp/ids.json" <<'PY' || fail "ids of $name differ from GPT-2's"
import json, sys
want = json.load(open(sys.argv[1]))[sys.argv[2]]
sys.exit(0 if json.load(open(sys.argv[3])) == want else 1)
PY
  "$bin" tokenizer decode --tokenizer "$tmp/gpt2.tok" --input "$tmp/ids.json" >"$tmp/back" 2>/dev/null
  cmp -s "$tmp/back" "$fixtures/$name" || fail "decode of $name is not the input"
done

# Shard out and back, multi-threaded, equal to the one-thread JSON ids.
"$bin" tokenizer encode --tokenizer "$tmp/gpt2.tok" --input "$fixtures/corpus.en" --out "$tmp/c.bin" --threads 2 2>/dev/null \
  || fail "encode to shard"
"$bin" tokenizer decode --tokenizer "$tmp/gpt2.tok" --input "$tmp/c.bin" --out "$tmp/c.txt" 2>/dev/null
cmp -s "$tmp/c.txt" "$fixtures/corpus.en" || fail "shard does not decode to the input"
python3 - "$tmp/c.bin" "$fixtures/gpt2-expected-ids.json" <<'PY' || fail "shard header or ids wrong"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
magic, version, n = struct.unpack("<3i", data[:12])
ids = list(struct.unpack("<%dH" % n, data[1024:]))
sys.exit(0 if (magic, version) == (20240520, 1) and ids == json.load(open(sys.argv[2]))["corpus.en"] else 1)
PY

# Training reproduces the reference merges, and exports a tokenizer.json.
"$bin" tokenizer train --input "$fixtures/corpus.en" --vocab-size 500 --special '<|endoftext|>' \
  --heldout-fraction 0 --out "$tmp/c500.tok" --hf-out "$tmp/c500.json" >"$tmp/summary" 2>/dev/null || fail "train"
python3 - "$tmp/c500.tok" "$fixtures/train-bpe-reference-merges.txt" "$tmp/c500.json" <<'PY' || fail "trained merges differ from the reference"
import json, sys
t = json.load(open(sys.argv[1]))
mine = [t["tokens"][a] + " " + t["tokens"][b] for a, b in t["merges"]]
ref = [l.rstrip("\n") for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
hf = json.load(open(sys.argv[3]))
sys.exit(0 if mine == ref and hf["model"]["merges"] == ref else 1)
PY
grep -q '"vocab_size":500' "$tmp/summary" || fail "train summary: $(cat "$tmp/summary")"
"$bin" tokenizer train --input "$fixtures/corpus.en" --vocab-size 300 --out "$tmp/h.tok" 2>"$tmp/log" >/dev/null
grep -q "bytes per token" "$tmp/log" || fail "train does not report held-out compression"
# The default held-out tail (1%, 30 bytes) would begin inside the last <|endoftext|>: training
# would see "<|endof" as text and learn merges of a special token's pieces.
for i in $(seq 50); do printf 'hello world hello there <|endoftext|> the cat sat on the mat\n'; done >"$tmp/eot.txt"
"$bin" tokenizer train --input "$tmp/eot.txt" --vocab-size 400 --special '<|endoftext|>' --out "$tmp/eot.tok" \
  2>/dev/null >/dev/null || fail "train with the held-out tail cut near a special token"
python3 - "$tmp/eot.tok" <<'PY' || fail "a token holds a piece of <|endoftext|>"
import json, sys
t = json.load(open(sys.argv[1]))
special = {s["id"] for s in t["specials"]}
sys.exit(any(("<" in tok or "|" in tok) for i, tok in enumerate(t["tokens"]) if i not in special and len(tok) > 1))
PY

# Bad input: one line naming the file (and line), exit 1, nothing written.
printf '#version: 0.2\n\xc4\xa0 t\n\xc4\xa0t\n' >"$tmp/bad_merges.txt"
expect_error "bad merges" "bad_merges.txt:3: expected two tokens" -- \
  "$bin" tokenizer import-gpt2 --vocab "$fixtures/gpt2_vocab.json" --merges "$tmp/bad_merges.txt" --out "$tmp/bad.tok"
printf '{"a": 0,\n "b": x}\n' >"$tmp/bad_vocab.json"
expect_error "bad vocab" "bad_vocab.json:2: expected a token id" -- \
  "$bin" tokenizer import-gpt2 --vocab "$tmp/bad_vocab.json" --merges "$fixtures/gpt2_merges.txt" --out "$tmp/bad.tok"
[ -e "$tmp/bad.tok" ] && fail "a failed import left $tmp/bad.tok"
expect_error "vocab too small" "--vocab-size: 256 leaves no room for the 1 --special token(s)" -- \
  "$bin" tokenizer train --input "$fixtures/corpus.en" --vocab-size 256 --special '<|endoftext|>' --out "$tmp/bad.tok"
expect_error "held-out text given twice" "--heldout-fraction: has no effect with --heldout" -- \
  "$bin" tokenizer train --input "$fixtures/corpus.en" --heldout "$fixtures/german.txt" --heldout-fraction 0.1 \
  --vocab-size 300 --out "$tmp/bad.tok"
expect_error "an input given twice" "--input: $fixtures/../tokenizer/corpus.en is the same file as $fixtures/corpus.en" -- \
  "$bin" tokenizer train --input "$fixtures/corpus.en" "$fixtures/../tokenizer/corpus.en" --vocab-size 300 --out "$tmp/bad.tok"
expect_error "held-out text trained on" "--heldout: $fixtures/corpus.en is also an --input" -- \
  "$bin" tokenizer train --input "$fixtures/corpus.en" --heldout "$fixtures/corpus.en" --vocab-size 300 --out "$tmp/bad.tok"
expect_error "unreadable input" "$tmp/nope.txt: cannot open" -- \
  "$bin" tokenizer train --input "$fixtures/corpus.en" "$tmp/nope.txt" --vocab-size 300 --out "$tmp/bad.tok"
expect_error "unreadable encode input" "$tmp/nope.txt: cannot open" -- \
  "$bin" tokenizer encode --tokenizer "$tmp/gpt2.tok" --input "$tmp/nope.txt" --out "$tmp/bad.bin"
[ -e "$tmp/bad.tok" ] || [ -e "$tmp/bad.bin" ] && fail "a failed run left output behind"
expect_error "unknown flag" "--frobnicate" -- "$bin" tokenizer encode --tokenizer "$tmp/gpt2.tok" --frobnicate
expect_error "bad id" "outside the vocabulary" -- sh -c "echo '[1, 99999]' | '$bin' tokenizer decode --tokenizer '$tmp/gpt2.tok'"
ls "$tmp" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$tmp")"

[ $failures -eq 0 ] && echo "all tokenizer CLI checks passed"
exit $((failures > 0))
