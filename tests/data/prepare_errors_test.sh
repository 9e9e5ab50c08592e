#!/usr/bin/env bash
# Bad input to `sixnd data prepare`: one clear line on stderr naming the fault, exit status 1,
# and nothing in --out (not even a scratch directory).
set -uo pipefail
[ -x "${SIXND_BIN:-}" ] || { echo "skip: SIXND_BIN is not set"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

good_text() {  # a paragraph every default filter keeps
    cat <<'TXT'
The river runs past the old mill, and the children walk along it with their dogs every morning.
In spring the water rises over the stones and the miller opens the sluice to let it pass.
Nobody in the village remembers when the wheel last turned, but the building is kept in good repair.
On summer evenings people sit on the wall by the bridge and watch the swallows hunt for insects.
The school teacher says that the mill was built with stone carried from a quarry in the hills.
TXT
}
mkdir "$T/src"
for i in 1 2 3; do good_text | sed "s/river/river$i/" >"$T/src/doc$i.txt"; done
printf 'The only text\n' >"$T/tok_corpus.txt"; good_text >>"$T/tok_corpus.txt"
"$SIXND_BIN" tokenizer train --input "$T/tok_corpus.txt" --vocab-size 300 --special '<|endoftext|>' --out "$T/tok.bin" >/dev/null 2>&1

# expect_error NAME PATTERN ARGS...: exit 1, PATTERN on stderr, no output left behind.
expect_error() {
    local name=$1 pattern=$2
    shift 2
    rm -rf "$T/out"
    "$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" "$@" 2>"$T/err"
    local rc=$?
    if [ $rc -ne 1 ] || ! grep -q -- "$pattern" "$T/err" || [ -e "$T/out" ] || ls -d "$T"/out.partial-* >/dev/null 2>&1; then
        echo "FAIL $name: rc=$rc, stderr:"; cat "$T/err"; fail=1
    else
        echo "ok $name: $(grep -- "$pattern" "$T/err" | head -1)"
    fi
}
expect_ok() {
    local name=$1
    shift
    rm -rf "$T/out"
    if ! "$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" "$@" 2>"$T/err" || [ ! -f "$T/out/manifest.json" ]; then
        echo "FAIL $name:"; cat "$T/err"; fail=1
    else
        echo "ok $name"
    fi
}

expect_ok "good input" --source "s=$T/src"

expect_error "missing file" "no files match" --source "s=$T/nothing*.txt"
printf 'not gzip at all, cut short' | gzip -c | head -c 20 >"$T/src/broken.txt.gz"
expect_error "unreadable file" "broken.txt.gz: corrupt or truncated gzip" --source "s=$T/src"
expect_ok "unreadable file skipped" --source "s=$T/src" --on-error skip
grep -q '"skipped"' "$T/out/manifest.json" || { echo "FAIL: skipped file not in the manifest"; fail=1; }
rm "$T/src/broken.txt.gz"

mkdir "$T/jsonl"
{ good_text | python3 -c 'import json,sys; print(json.dumps({"text": sys.stdin.read()}))'
  echo '{"text": "broken'
  good_text | sed s/river/lake/ | python3 -c 'import json,sys; print(json.dumps({"text": sys.stdin.read()}))'; } >"$T/jsonl/x.jsonl"
expect_error "broken JSONL line" "x.jsonl:2: broken JSON line" --source "s=$T/jsonl"
expect_ok "broken JSONL line skipped" --source "s=$T/jsonl" --on-error skip
grep -q '"broken_lines_skipped": 1' "$T/out/manifest.json" || { echo "FAIL: skipped line not counted"; fail=1; }
# Once, not once per pass over the data.
warned=$(grep -c "x.jsonl:2: broken JSON line; skipped" "$T/err")
[ "$warned" -eq 1 ] || { echo "FAIL: the skipped line was warned of $warned times"; fail=1; }
expect_error "missing JSONL field" "no field \"body\"" --source "s=$T/jsonl" --jsonl-field body

: >"$T/empty.txt"
expect_error "empty input" "hold no documents" --source "s=$T/empty.txt"
# A source directory with no files in it beside one that has some: the mix would lack it silently.
mkdir "$T/empty_dir"
expect_error "a source with no files" "--source web: .*empty_dir: holds no files" --source "s=$T/src" --source "web=$T/empty_dir"
# One evaluation file more than a document can record as the one it hit: the index used to wrap
# negative and read as no hit, so a document copied from the last file was kept.
mkdir "$T/many_eval"
python3 -c 'import sys; [open(f"{sys.argv[1]}/e{i:05d}.txt", "w").write(f"item {i}\n") for i in range(32768)]' "$T/many_eval"
expect_error "too many evaluation files" "--decontaminate: 32768 evaluation files are more than 32767" --source "s=$T/src" \
    --decontaminate "$T/many_eval"
rm -rf "$T/many_eval"
expect_error "everything filtered" "every document was removed" --source "s=$T/src" --min-words 100000
expect_error "unknown language" "unknown language code 'qq'" --source "s=$T/src" --langs en,qq
expect_error "unknown flag" "--bogus" --source "s=$T/src" --bogus
expect_error "bad source" "NAME=GLOB" --source "$T/src"
expect_error "bad on-error" "--on-error" --source "s=$T/src" --on-error maybe
expect_error "bad threshold" "--val-fraction" --source "s=$T/src" --val-fraction 2
"$SIXND_BIN" data prepare --tokenizer "$T/nothere.bin" --out "$T/out" --source "s=$T/src" 2>"$T/err"
if [ $? -ne 1 ] || ! grep -q "nothere.bin" "$T/err" || [ -e "$T/out" ]; then echo "FAIL missing tokenizer"; cat "$T/err"; fail=1; else echo "ok missing tokenizer: $(cat "$T/err")"; fi

# A FIFO named as a source waited forever for a writer (the timeout turns a hang into a failure).
mkfifo "$T/pipe"
rm -rf "$T/out"
timeout 60 "$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" --source "s=$T/pipe" 2>"$T/err"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "pipe: is a FIFO, not a regular file" "$T/err" || [ -e "$T/out" ]; then
    echo "FAIL FIFO source: rc=$rc, stderr:"; cat "$T/err"; fail=1
else
    echo "ok FIFO source: $(cat "$T/err")"
fi
rm "$T/pipe"
expect_error "a file in two sources" "src/doc1.txt is also in --source a" --source "a=$T/src" --source "b=$T/src/doc1.txt"
# A threshold of a stage that is switched off is named, not silently ignored.
expect_ok "thresholds of stages switched off" --source "s=$T/src" --no-langid --langs fr --no-dedup-near --minhash-bands 7 \
    --decontaminate-ngram 8
for w in "--langs has no effect with --no-langid" "--minhash-bands has no effect with --no-dedup-near" \
         "--decontaminate-ngram has no effect without --decontaminate"; do
    grep -q -- "$w" "$T/err" || { echo "FAIL: no warning '$w'"; cat "$T/err"; fail=1; }
done
if grep -q "has no effect" <("$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out2" --source "s=$T/src" --langs en 2>&1); then
    echo "FAIL: a warning for a flag that does take effect"; fail=1
fi
rm -rf "$T/out2" "$T/out"

mkdir "$T/out"; touch "$T/out/keep"
"$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" --source "s=$T/src" 2>"$T/err"
if [ $? -ne 1 ] || ! grep -q "already exists" "$T/err" || [ ! -e "$T/out/keep" ]; then echo "FAIL existing --out"; cat "$T/err"; fail=1; else echo "ok existing --out kept"; fi
# --overwrite replaces an earlier output, never a directory sixnd did not write (more such cases:
# bad_input_data_test.py).
"$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" --source "s=$T/src" --overwrite 2>"$T/err"
if [ $? -ne 1 ] || ! grep -q "no sixnd data manifest" "$T/err" || [ ! -e "$T/out/keep" ]; then echo "FAIL --overwrite of a foreign directory"; cat "$T/err"; fail=1; else echo "ok --overwrite keeps a foreign directory"; fi
rm "$T/out/keep"; rmdir "$T/out"
"$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" --source "s=$T/src" 2>"$T/err" &&
"$SIXND_BIN" data prepare --tokenizer "$T/tok.bin" --out "$T/out" --source "s=$T/src" --overwrite --seed 7 2>"$T/err" && [ -f "$T/out/manifest.json" ] \
    && grep -q '"seed": 7' "$T/out/manifest.json" && echo "ok --overwrite replaces an earlier output" || { echo "FAIL --overwrite"; cat "$T/err"; fail=1; }

[ $fail -eq 0 ] && echo PASS
exit $fail
