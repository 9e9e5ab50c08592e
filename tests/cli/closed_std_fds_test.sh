#!/usr/bin/env bash
# sixnd started with stderr or stdout closed (`2>&-`, a launcher that closes them): the slots used
# to go to the next files it opened, and its log lines were written into data prepare's scratch
# files (it then failed, saying nothing) and could land in shards or checkpoints. Now the outputs
# are the same bytes as with the streams open, and a result printed to a closed stdout is still
# reported lost (exit 1).
set -uo pipefail
[ -x "${SIXND_BIN:-}" ] || { echo "skip: SIXND_BIN is not set"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

mkdir "$T/src"
words=(river mill children morning water stones village building evening swallows teacher quarry bridge)
for i in $(seq 1 12); do
    # Documents that differ and that every default filter keeps
    for j in 1 2 3 4 5; do
        echo "The ${words[(i + j) % 13]} was seen by the ${words[(i * j) % 13]} near the ${words[(i + 2 * j) % 13]} on day $i.$j, and they talked about it for a long while."
    done >"$T/src/doc$i.txt"
done
cat "$T"/src/*.txt >"$T/corpus.txt"

"$SIXND_BIN" tokenizer train --input "$T/corpus.txt" --vocab-size 300 --special '<|endoftext|>' --out "$T/tok_open.bin" >/dev/null 2>&1
"$SIXND_BIN" tokenizer train --input "$T/corpus.txt" --vocab-size 300 --special '<|endoftext|>' --out "$T/tok_closed.bin" <&- 2>&- >/dev/null
rc=$?
check "tokenizer train with stdin and stderr closed: exit $rc" '[ $rc -eq 0 ]'
check "tokenizer train with stdin and stderr closed: the same tokenizer file" 'cmp -s "$T/tok_open.bin" "$T/tok_closed.bin"'

prepare() {  # prepare OUT: data prepare of src/ into OUT
    "$SIXND_BIN" data prepare --source "s=$T/src" --tokenizer "$T/tok_open.bin" --out "$1" --no-quality --no-repetition \
        --no-langid --no-dedup-exact --no-dedup-near --val-fraction 0.25
}
prepare "$T/open" >/dev/null 2>&1 || { echo "FAIL data prepare with the streams open"; exit 1; }
prepare "$T/closed" 2>&- >/dev/null
rc=$?
check "data prepare with stderr closed: exit $rc" '[ $rc -eq 0 ]'
for f in "$T"/open/*.bin; do
    check "data prepare with stderr closed: $(basename "$f") the same bytes" 'cmp -s "$f" "$T/closed/$(basename "$f")"'
done

echo "hello" | "$SIXND_BIN" tokenizer encode --tokenizer "$T/tok_open.bin" --input - >&- 2>"$T/err"
rc=$?
check "encode to a closed stdout: exit $rc, the loss reported" '[ $rc -eq 1 ] && grep -q "stdout" "$T/err"'
exit $fail
