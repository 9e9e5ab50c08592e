#!/usr/bin/env bash
# Installs what sixnd needs from Debian's packages, only what is missing, and the packages named
# as arguments (a script's own needs: emulated_avx2_check.sh's qemu-user). Run by run.sh, test.sh
# and the other scripts; safe to run again.
set -euo pipefail

SIXND_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev
  libdnnl-dev libpcre2-dev libxxhash-dev nlohmann-json3-dev libcli11-dev
  libcld2-dev libutf8proc-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  fortunes
  python3 python3-torch python3-numpy python3-matplotlib python3-regex libopenblas0
  "$@"
)

missing=()
for p in "${SIXND_PACKAGES[@]}"; do
  # The package's state alone: the whole Status field starts with what is wanted of it, "hold" for
  # a held package (apt-mark hold), which was taken for missing and installed again on every run.
  # One line per architecture it is installed for.
  state=$(dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null || true)
  grep -qx installed <<<"$state" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  # Where they cannot be installed, one line says what is missing (apt-get's own errors, such as
  # a package it does not know, stay above it).
  cannot() { echo "setup: cannot install ${missing[*]}: $1" >&2; exit 1; }
  command -v apt-get >/dev/null || cannot "no apt-get here (a Debian or Ubuntu machine has it); install them by hand"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || cannot "not root and no sudo; run this as root"
    SUDO="sudo"
  fi
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq || cannot "apt-get update failed"
  # DEBIAN_FRONTEND goes through env, past sudo's env_reset: a debconf question asked with the
  # output in /dev/null would wait unseen for an answer.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    cannot "apt-get install failed"
fi
