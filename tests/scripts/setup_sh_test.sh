#!/usr/bin/env bash
# scripts/setup.sh where packages are missing and cannot be installed: one line naming them and the
# reason, exit 1, nothing else run (no apt-get here, or not root without sudo); through sudo,
# apt-get install still runs noninteractive; a held package is installed, not missing; with nothing missing
# it does nothing and succeeds (run twice); it never sets OPENBLAS_* (or anything else) for others.
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_setup_sh_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
for tool in grep id; do ln -s "$(command -v "$tool")" "$T/bin/$tool"; done
# dpkg-query that knows no package: everything is missing.
printf '#!/bin/sh\nexit 1\n' >"$T/bin/dpkg-query"
chmod +x "$T/bin/dpkg-query"

out=$(PATH="$T/bin" /bin/bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "no apt-get: exit $rc: $out"
((rc == 1)) || fail "exit $rc without apt-get (expected 1)"
[[ $(wc -l <<<"$out") == 1 ]] || fail "more than one line without apt-get"
[[ $out == "setup: cannot install "*fortunes*"no apt-get here"* ]] || fail "the line does not name the packages and the reason"

# Not root and no sudo: an id that says uid 1000, and an apt-get that must not run.
printf '#!/bin/sh\n[ "$1" = -u ] && echo 1000 || exec /usr/bin/id "$@"\n' >"$T/bin/id.stub"
rm "$T/bin/id" && mv "$T/bin/id.stub" "$T/bin/id" && chmod +x "$T/bin/id"
printf '#!/bin/sh\ntouch "%s/apt_ran"\n' "$T" >"$T/bin/apt-get"
chmod +x "$T/bin/apt-get"
out=$(PATH="$T/bin" /bin/bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "not root, no sudo: exit $rc: $out"
((rc == 1)) || fail "exit $rc when not root and without sudo (expected 1)"
[[ $out == *"not root and no sudo"* ]] || fail "the line does not say why"
[[ ! -e $T/apt_ran ]] || fail "apt-get ran without the rights to install"

# Not root, with sudo: DEBIAN_FRONTEND=noninteractive reaches apt-get install through sudo,
# whose env_reset (Debian's default sudoers) drops the caller's environment (set outside sudo,
# apt-get ran with debconf's default frontend, and a question, its output in /dev/null, waited
# unseen). This sudo, as env_reset does, runs the command with PATH alone.
ln -s "$(command -v env)" "$T/bin/env"
printf '#!/bin/sh\nexec /usr/bin/env -i PATH="$PATH" "$@"\n' >"$T/bin/sudo"
printf '#!/bin/sh\necho "$1 DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}" >>"%s/calls"\n' "$T" >"$T/bin/apt-get"
chmod +x "$T/bin/sudo" "$T/bin/apt-get"
out=$(PATH="$T/bin" /bin/bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "through sudo: exit $rc: $out; apt-get calls: $(tr '\n' ';' <"$T/calls" 2>/dev/null)"
((rc == 0)) || fail "exit $rc through sudo"
grep -qx "install DEBIAN_FRONTEND=noninteractive" "$T/calls" 2>/dev/null ||
    fail "apt-get install ran without DEBIAN_FRONTEND=noninteractive"
rm "$T/bin/sudo"

# An apt-get that fails (an unknown package, no network): its status is reported in one line.
printf '#!/bin/sh\necho "E: Unable to locate package $4" >&2; exit 100\n' >"$T/bin/apt-get"
rm "$T/bin/id" && ln -s "$(command -v id)" "$T/bin/id"
if [[ $(id -u) == 0 ]]; then
    out=$(PATH="$T/bin" /bin/bash "$SRC/scripts/setup.sh" 2>&1)
    rc=$?
    echo "apt-get fails: exit $rc: $out"
    ((rc == 1)) || fail "exit $rc when apt-get fails (expected 1)"
    [[ $(tail -1 <<<"$out") == "setup: cannot install "*"apt-get update failed" ]] || fail "no closing line naming the failure"
fi

# Every package installed, and held (apt-mark hold): nothing is missing, nothing to do (a held
# package, its Status "hold ok installed", was taken for missing and installed again each time:
# apt-get update run, and without root or sudo set-up failed). This dpkg-query fills in the
# Status fields a -f format names, as dpkg-query does for a held package.
ln -s "$(command -v sed)" "$T/bin/sed"
cat >"$T/bin/dpkg-query" <<'STUB'
#!/bin/sh
printf '%s' "${2#-f=}" | sed -e 's/\${Status}/hold ok installed/g' -e 's/\${db:Status-Want}/hold/g' \
    -e 's/\${db:Status-Status}/installed/g' -e 's/\${db:Status-Abbrev}/hi /g' -e 's/\\n/\n/g'
STUB
chmod +x "$T/bin/dpkg-query"
printf '#!/bin/sh\n: >"%s/apt_ran"\n' "$T" >"$T/bin/apt-get"
rm -f "$T/apt_ran"
out=$(PATH="$T/bin" /bin/bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "every package held: exit $rc: $out"
((rc == 0)) && [[ -z $out ]] || fail "every package installed and held: exit $rc, printed: $out"
[[ ! -e $T/apt_ran ]] || fail "apt-get ran for packages that are installed and held"

# Nothing missing: nothing to do, twice; the script exports nothing (OPENBLAS_* least of all).
if command -v dpkg-query >/dev/null && bash "$SRC/scripts/setup.sh" </dev/null >/dev/null 2>&1; then
    for i in 1 2; do
        out=$(bash "$SRC/scripts/setup.sh" 2>&1) || fail "run $i with nothing missing failed: $out"
        [[ -z $out ]] || fail "run $i with nothing missing printed: $out"
    done
fi
! grep -n 'OPENBLAS\|export ' "$SRC/scripts/setup.sh" || fail "setup.sh sets environment variables"
echo "all passed"
