#!/usr/bin/env bash
# scripts/emulated_avx2_check.sh's arguments, on a copy whose setup.sh is a stand-in that leaves a
# mark and stops it: anything but none or `--cpu MODEL` (a word after the model, which used to be
# ignored, or `--cpu` alone) gets the usage line and exit 2 before set-up runs.
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_emulated_args_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/repo/scripts"
cp "$SRC/scripts/emulated_avx2_check.sh" "$SRC/scripts/avx2_path_tests.sh" "$T/repo/scripts/"
printf 'touch "$(dirname "$0")/../setup_ran"\nexit 1\n' >"$T/repo/scripts/setup.sh"

for args in "--cpu EPYC-Rome-v2 extra" "--cpu" "--cpu=EPYC-Rome-v2" "EPYC-Rome-v2"; do
    read -r -a a <<<"$args"
    rm -f "$T/repo/setup_ran"
    out=$(bash "$T/repo/scripts/emulated_avx2_check.sh" "${a[@]}" 2>&1)
    rc=$?
    echo "emulated_avx2_check.sh $args: exit $rc: $out"
    ((rc == 2)) && [[ $(wc -l <<<"$out") == 1 && $out == usage:* ]] || fail "'$args': not the usage line with exit 2"
    [[ ! -e $T/repo/setup_ran ]] || fail "'$args': set-up ran"
done
rm -f "$T/repo/setup_ran"
bash "$T/repo/scripts/emulated_avx2_check.sh" --cpu EPYC-Rome-v2 >/dev/null 2>&1
[[ -e $T/repo/setup_ran ]] || fail "'--cpu EPYC-Rome-v2' was refused"

echo "all passed"
