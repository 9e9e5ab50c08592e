#!/usr/bin/env bash
# scripts/setup.sh run by a user with sudo, where packages are missing: apt-get install gets
# DEBIAN_FRONTEND=noninteractive through sudo, whose env_reset (Debian's default sudoers) drops
# the caller's environment (it used to be set outside sudo: apt-get then ran with debconf's
# default frontend, and a question, its output in /dev/null, waited unseen for an answer).
set -u
SRC=${SIXND_SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)}
fail() { echo "FAILED: $*"; exit 1; }
T=$(mktemp -d /tmp/sixnd_setup_sh_sudo_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin"
for tool in grep env; do ln -s "$(command -v "$tool")" "$T/bin/$tool"; done
# dpkg-query that knows no package; id that says uid 1000; sudo that, as env_reset does, runs the
# command with PATH alone; apt-get that records each call's DEBIAN_FRONTEND.
printf '#!/bin/sh\nexit 1\n' >"$T/bin/dpkg-query"
printf '#!/bin/sh\n[ "$1" = -u ] && echo 1000\n' >"$T/bin/id"
printf '#!/bin/sh\nexec /usr/bin/env -i PATH="$PATH" T="%s" "$@"\n' "$T" >"$T/bin/sudo"
printf '#!/bin/sh\necho "$1 DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-}" >>"$T/calls"\n' >"$T/bin/apt-get"
chmod +x "$T/bin/"*

out=$(PATH="$T/bin" /bin/bash "$SRC/scripts/setup.sh" 2>&1)
rc=$?
echo "through sudo: exit $rc: $out"
echo "apt-get calls: $(tr '\n' ';' <"$T/calls" 2>/dev/null)"
((rc == 0)) || fail "exit $rc"
grep -qx "install DEBIAN_FRONTEND=noninteractive" "$T/calls" 2>/dev/null ||
    fail "apt-get install ran without DEBIAN_FRONTEND=noninteractive"
echo "all passed"
