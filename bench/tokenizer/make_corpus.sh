#!/usr/bin/env bash
# Builds the English benchmark corpus: Debian's fortune cookies and the GCIDE dictionary
# (Webster's 1913 + WordNet), about 40 MB of real English text. Usage: make_corpus.sh OUT_FILE
set -euo pipefail
out=${1:?usage: make_corpus.sh OUT_FILE}
need=()
[ -d /usr/share/games/fortunes ] || need+=(fortunes)
[ -f /usr/share/dictd/gcide.dict.dz ] || need+=(dict-gcide)
if [ ${#need[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >&2
fi
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
# Fortune files are the plain-text ones (not the .dat indexes, not the .u8 duplicates).
find /usr/share/games/fortunes -type f ! -name '*.dat' ! -name '*.u8' | sort | xargs cat >"$tmp"
zcat /usr/share/dictd/gcide.dict.dz >>"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "$out: $(stat -c %s "$out") bytes" >&2
