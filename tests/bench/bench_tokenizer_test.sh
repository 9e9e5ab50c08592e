#!/usr/bin/env bash
# bench/tokenizer/bench_tokenizer.sh when something fails: a non-zero exit with the failing
# command's own error on stderr (its stderr goes to a file in the work directory), no table
# written, a failed command's times not kept for REUSE=1, and no work directory of its own left
# in /tmp. sentencepiece and apt-get are stand-ins on the PATH (nothing is installed); sixnd is a
# stand-in whose tokenizer training fails, or missing. With REUSE=1 a result is kept only where the
# note under the table holds: measured today by the same command (a run at another thread count,
# which nproc takes from OMP_NUM_THREADS, trains again; it had kept the other count's rows), and
# the machine's CPUs are not that thread count (at OMP_NUM_THREADS=1 it said "1 cores").
set -uo pipefail
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
[ -x /usr/bin/time ] || { echo "skip: no /usr/bin/time"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

mkdir "$T/stubs" "$T/work"
printf '#!/bin/sh\necho "apt-get: stand-in, installs nothing" >&2\nexit 100\n' >"$T/stubs/apt-get"
printf '#!/bin/sh\nexit 0\n' >"$T/stubs/spm_train"
printf '#!/bin/sh\necho "a b c d"\n' >"$T/stubs/spm_encode"
cat >"$T/sixnd" <<'STUB'
#!/bin/sh
if [ "$1 $2" = "tokenizer train" ]; then echo "sixnd: error: training broken on purpose" >&2; exit 1; fi
exit 0
STUB
# A sixnd whose every verb succeeds, logging each call to $T/calls (its training takes a measurable
# wall time: the table divides by it).
cat >"$T/sixnd_ok" <<STUB
#!/bin/sh
echo "\$1 \$2" >>"$T/calls"
case "\$1 \$2" in
  "tokenizer train") sleep 0.1; echo '{"bytes_per_token": 4.0}' ;;
  "tokenizer encode")
    prev=
    for a in "\$@"; do [ "\$prev" = --out ] && out=\$a; prev=\$a; done
    python3 -c "import struct, sys; open(sys.argv[1], 'wb').write(struct.pack('<256i', 20240520, 1, 10, *[0] * 253))" "\$out"
    echo "encoded 0.000044 MB into 10 tokens in 0.500000 s (0.000088 MB/s)" >&2 ;;
esac
exit 0
STUB
chmod +x "$T/stubs/"* "$T/sixnd" "$T/sixnd_ok"
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

# reused THREADS WANT_TRAINS WHAT: a REUSE=1 run at THREADS succeeds, having trained WANT_TRAINS
# times in all.
mkdir "$T/reuse"
printf 'Some English text for the stand-in corpus.\n' >"$T/reuse/english.txt"
reused() {
    env PATH="$T/stubs:$PATH" VOCABS=300 SIXND_SHARED=${SIXND_SHARED:-$SRC/../shared} WORK="$T/reuse" REUSE=1 \
        OMP_NUM_THREADS="$1" bash "$SRC/bench/tokenizer/bench_tokenizer.sh" "$T/sixnd_ok" "$T/reuse.md" >"$T/out" 2>"$T/err"
    local rc=$? trains
    trains=$(grep -c '^tokenizer train' "$T/calls")
    if [ $rc -ne 0 ] || [ "$trains" -ne "$2" ]; then
        echo "FAIL REUSE=1, $3: rc=$rc, trained $trains times (want $2), stderr:"; cat "$T/err"; fail=1
    else
        echo "ok REUSE=1, $3: trained $trains times"
    fi
}
reused 1 1 "first run"
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
if grep -q "^Machine: .*, $cpus CPUs," "$T/reuse.md" && grep -q "same file, 1 threads each" "$T/reuse.md"; then
    echo "ok the machine's $cpus CPUs and the 1 thread of OMP_NUM_THREADS=1 are told apart"
else
    echo "FAIL CPUs at OMP_NUM_THREADS=1 (want $cpus):"; head -8 "$T/reuse.md"; fail=1
fi
reused 1 1 "the same command again keeps its result"
reused 2 2 "another thread count trains again"
touch -d '2 days ago' "$T/reuse/sixnd-300.time"
reused 2 3 "a result from another day is measured again"
exit $fail
