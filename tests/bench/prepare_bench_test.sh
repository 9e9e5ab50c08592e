#!/usr/bin/env bash
# bench/data/prepare_bench.sh when a step fails: the step's own error on stderr (its log lives in
# the temporary directory the exit removes), exit status 1, no table written. Stand-in sixnd
# binaries fail at tokenizer training or at data prepare; a missing binary is named.
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
exit $fail
