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
  python3 python3-torch python3-numpy python3-matplotlib libopenblas0
  "$@"
)

missing=()
for p in "${SIXND_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
