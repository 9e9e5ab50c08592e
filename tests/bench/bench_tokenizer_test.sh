#!/usr/bin/env bash
# bench/tokenizer/bench_tokenizer.sh when something fails: a non-zero exit with the failing
# command's own error on stderr (its stderr goes to a file in the work directory), no table
# written, a failed command's times not kept for REUSE=1, and no work directory of its own left
# in /tmp. sentencepiece and apt-get are stand-ins on the PATH (nothing is installed); sixnd is a
# stand-in whose tokenizer training fails, or missing.
set -uo pipefail
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -x /usr/bin/time ] || { echo "skip: no /usr/bin/time"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

mkdir "$T/stubs" "$T/work"
printf '#!/bin/sh\necho "apt-get: stand-in, installs nothing" >&2\nexit 100\n' >"$T/stubs/apt-get"
printf '#!/bin/sh\nexit 0\n' >"$T/stubs/spm_train"
cat >"$T/sixnd" <<'STUB'
#!/bin/sh
if [ "$1 $2" = "tokenizer train" ]; then echo "sixnd: error: training broken on purpose" >&2; exit 1; fi
exit 0
STUB
chmod +x "$T/stubs/"* "$T/sixnd"
printf 'Some English text for the stand-in corpus.\n' >"$T/work/english.txt"

ours() { ls -d /tmp/sixnd-tokbench.* 2>/dev/null | sort; }

# expect NAME PATTERN BIN [VAR=VALUE...]: a failing exit, PATTERN on stderr, no table, no new /tmp/sixnd-tokbench.*.
expect() {
    local name=$1 pattern=$2 bin=$3
    shift 3
    rm -f "$T/out.md"
    local before
    before=$(ours)
    env PATH="$T/stubs:$PATH" VOCABS=300 SIXND_SHARED=${SIXND_SHARED:-$SRC/../shared} "$@" \
        bash "$SRC/bench/tokenizer/bench_tokenizer.sh" "$bin" "$T/out.md" >"$T/out" 2>"$T/err"
    local rc=$?
    local left
    left=$(comm -13 <(echo "$before") <(ours))
    if [ $rc -eq 0 ] || ! grep -q -- "$pattern" "$T/err" || [ -e "$T/out.md" ] || [ -n "$left" ]; then
        echo "FAIL $name: rc=$rc, left in /tmp: '$left', stderr:"; cat "$T/err"; fail=1
    else
        echo "ok $name: $(grep -- "$pattern" "$T/err" | head -1)"
    fi
}
expect "missing binary" "$T/nowhere/sixnd" "$T/nowhere/sixnd"
expect "no WORK, the corpus cannot be made" "installs nothing" "$T/sixnd"
expect "tokenizer training fails" "training broken on purpose" "$T/sixnd" WORK="$T/work"
expect "the same with REUSE=1" "training broken on purpose" "$T/sixnd" WORK="$T/work" REUSE=1
exit $fail
