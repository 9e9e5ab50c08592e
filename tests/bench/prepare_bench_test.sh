#!/usr/bin/env bash
# bench/data/prepare_bench.sh when a step fails: the step's own error on stderr (its log lives in
# the temporary directory the exit removes), exit status 1, no table written. Stand-in sixnd
# binaries fail at tokenizer training or at data prepare; a missing binary is named. The "all
# threads" run takes every CPU under OMP_NUM_THREADS=1 too (nproc had given it one).
set -uo pipefail
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -x /usr/bin/time ] || { echo "skip: no /usr/bin/time"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

# stub NAME FAIL_AT: a sixnd whose FAIL_AT verb ("tokenizer" or "data") ends with an error line.
stub() {
    cat >"$T/$1" <<STUB
#!/usr/bin/env bash
if [ "\$1" = "$2" ]; then echo "sixnd: error: $2 broken on purpose" >&2; exit 1; fi
exit 0
STUB
    chmod +x "$T/$1"
}
stub tok_fails tokenizer
stub data_fails data
# A sixnd whose data prepare fails, naming its thread count, unless it was given one thread.
cat >"$T/many_fails" <<'STUB'
#!/usr/bin/env bash
[ "$1" = data ] || exit 0
while [ $# -gt 0 ]; do
  if [ "$1" = --threads ] && [ "$2" != 1 ]; then echo "sixnd: error: threads $2" >&2; exit 1; fi
  shift
done
exit 0
STUB
chmod +x "$T/many_fails"

# expect NAME PATTERN BIN: exit 1, PATTERN on stderr, no table.
expect() {
    rm -f "$T/out.md"
    bash "$SRC/bench/data/prepare_bench.sh" "$3" "$T/out.md" >"$T/out" 2>"$T/err"
    local rc=$?
    if [ $rc -ne 1 ] || ! grep -q -- "$2" "$T/err" || [ -e "$T/out.md" ]; then
        echo "FAIL $1: rc=$rc, stderr:"; cat "$T/err"; fail=1
    else
        echo "ok $1: $(grep -- "$2" "$T/err" | head -1)"
    fi
}
expect "no binary" "$T/nowhere/sixnd" "$T/nowhere/sixnd"
expect "tokenizer train fails" "tokenizer broken on purpose" "$T/tok_fails"
expect "data prepare fails" "data broken on purpose" "$T/data_fails"
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
if [ "$cpus" -gt 1 ]; then
  OMP_NUM_THREADS=1 expect "all threads under OMP_NUM_THREADS=1" "threads $cpus" "$T/many_fails"
else
  echo "ok all threads under OMP_NUM_THREADS=1: skipped, one CPU here"
fi
exit $fail
