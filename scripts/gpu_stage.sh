#!/usr/bin/env bash
# Stages what the device machine runs into one folder, the only build output carried there
# (README.md, "Running the GPU check on a lent device"):
#   <build>/stage/bin/      the gpu test binaries and the two benchmarks, stripped of symbols
#                           (their CUDA machine code stays: it lives in allocated sections)
#   <build>/stage/scripts/  gpu_check.sh and gpu_table.py
#   <build>/stage/bench/    torch_attention.py and torch_gpt2.py, the PyTorch peers
# so `bash <build>/stage/scripts/gpu_check.sh` runs from the folder alone. Prints the folder's
# size beside the working tree's (tracked and untracked-not-ignored files, which travel with
# every call too) and fails when the two together come near the device tool's 64 MiB limit.
# Usage: scripts/gpu_stage.sh [BUILD_DIR]   (default build-gpu, the `gpu` preset's folder)
set -euo pipefail
if (($# > 1)) || [[ ${1:-} == -* ]]; then
    echo "usage: scripts/gpu_stage.sh [BUILD_DIR]   (default build-gpu, the gpu preset's folder)" >&2
    exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# A BUILD_DIR given is taken from the directory gpu_stage.sh is started in.
BUILD=$(realpath -ms -- "${1:-$ROOT/build-gpu}")
cd "$ROOT"
STAGE=$BUILD/stage
# The device tool's carry names a path inside the repository, relative to its root.
CARRY=$(realpath -ms --relative-to="$ROOT" -- "$STAGE")
if [[ $CARRY == ../* ]]; then
    echo "gpu_stage: $BUILD is outside the repository $ROOT, and a device call carries only paths inside it" >&2
    exit 1
fi
BINS=(tests/gpu_ops_test tests/gpu_attention_test tests/gpu_train_test tests/gpu_muon_test tests/gpu_nccl_test
      bench/attention_bench bench/model_bench)

for b in "${BINS[@]}"; do
    if [[ ! -x $BUILD/$b ]]; then
        echo "gpu_stage: $BUILD/$b is missing; build it first: cmake --preset gpu && cmake --build --preset gpu" >&2
        exit 1
    fi
done
rm -rf "$STAGE"
# A stage that failed a check below (or was cut short) is removed: a device call carrying it
# would run binaries without CUDA code, or be refused for its size.
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/scripts" "$STAGE/bench"
for b in "${BINS[@]}"; do strip --strip-unneeded -o "$STAGE/bin/$(basename "$b")" "$BUILD/$b"; done
cp scripts/gpu_check.sh scripts/gpu_table.py "$STAGE/scripts/"
cp bench/torch_attention.py bench/torch_gpt2.py "$STAGE/bench/"

# Stripping must leave the CUDA machine code: each binary still has its fat binary section.
for b in "${BINS[@]}"; do
    if ! readelf -S -W "$STAGE/bin/$(basename "$b")" | grep -q '\.nv_fatbin'; then
        echo "gpu_stage: $BUILD/$b has no .nv_fatbin section once stripped (no CUDA code: configure with the gpu preset)" >&2
        exit 1
    fi
done

stage_bytes=$(du -sb "$STAGE" | cut -f1)
# What every call sends besides the stage: tracked files and untracked ones git does not ignore.
# One du over the whole NUL-separated list (xargs could split it into several totals); a tracked
# file deleted here makes du complain and exit 1, but its total still counts what is there.
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    tree_bytes=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null |
                 tail -1 | cut -f1 || true)
    tree_bytes=${tree_bytes:-0}
    tree_size="the working tree $(mib "$tree_bytes")"
else
    tree_bytes=0
    tree_size="the working tree not counted ($ROOT is no git checkout, and a call carries a checkout's files)"
fi
nbins=$(find "$STAGE/bin" -type f | wc -l)
echo "gpu_stage: $STAGE holds $(mib "$stage_bytes") ($nbins binaries, scripts, PyTorch peers);" \
     "$tree_size; together $(mib $((stage_bytes + tree_bytes))) of the 64 MiB a call carries"
if ((stage_bytes + tree_bytes > 56 * 1048576)); then
    echo "gpu_stage: too close to the 64 MiB limit" >&2
    exit 1
fi
trap - EXIT
# The staged gpu_check.sh finds the binaries beside itself; scripts/gpu_check.sh looks only in
# build-gpu/stage.
echo "gpu_stage: carry \"$CARRY\"; run: bash $(printf '%q' "$CARRY/scripts/gpu_check.sh")"
