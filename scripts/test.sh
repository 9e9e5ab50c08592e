#!/usr/bin/env bash
# The whole test suite: set up; where the CUDA toolkit is installed, compile all CUDA code for
# sm_80 and sm_90 (warnings are errors, no register spills in the attention kernels) and run
# the gpu tests, which skip with the reason when no device is present; then build the CPU code
# with AddressSanitizer + UBSan and run every test through ctest (GoogleTest, the PyTorch
# parity scripts, the mpirun tests); where the CPU has AVX-512, also build the kernels' AVX2
# variants and run their tests. The CPU suite runs last, so its summary closes the output.
# The environment is passed through untouched (OPENBLAS_CORETYPE and the like stay as found).
#   SIXND_CPU_ISA=avx2 bash scripts/test.sh   runs the suite on the code path of an AVX2-only CPU
#   (no AVX-512, BF16 through FP32 kernels) on a machine that has more; see README.
set -euo pipefail
# The checkout this file is in, also when it is started through a link to it or to its folder.
cd "$(dirname "$(readlink -f -- "$0")")/.."
bash scripts/cpu_isa_check.sh test.sh || exit 2
bash scripts/setup.sh strace  # strace: the tests that send a signal at each rename of a commit

JOBS=$(nproc)
# ctest runs one test per core at once: one OpenMP thread each keeps them from fighting over
# the cores (an OpenMP join waits for every thread, and a descheduled one costs milliseconds).
export OMP_NUM_THREADS=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# ctest ends on Ctrl-C with a failure status of its own, not by the signal, and bash goes on after
# a command that does so: without this, each Ctrl-C stopped one pass and the next one started.
# (SIGTERM and SIGHUP end bash itself at once.)
trap 'echo "test.sh: interrupted by SIGINT; the passes after this one did not run" >&2; exit 130' INT

CPU_PASS_EXCLUDE=()
# A pass whose tests fail does not stop the later ones (a build that fails does): each pass's
# failures are listed by its ctest, and the last line names the passes that failed.
FAILED_PASSES=()
failed_passes() { local failed; failed=$(printf '%s; ' "${FAILED_PASSES[@]}"); echo "${failed%; }"; }
# build NAME CMD...: a failed build stops test.sh; its last line still names the build, and the
# passes that failed before it (the build tool's own error used to be the last line).
build() {
  local name=$1 rc earlier=""
  shift
  "$@" && return 0 || rc=$?
  [ ${#FAILED_PASSES[@]} -eq 0 ] || earlier="; tests failed in: $(failed_passes)"
  echo "test.sh: build failed: $name (exit $rc); the passes after it did not run$earlier" >&2
  exit 1
}
if command -v nvcc >/dev/null; then
  echo "== build (CUDA, sm_80 + sm_90) ==" >&2
  # Device code at full optimization (the spill check is on what ptxas makes of it); the host
  # C++ of this build at -O1, which compiles about a quarter faster than -O3 (cli/plan.cpp: 9.1
  # against 13.2 s): here its binaries only skip.
  build "CUDA (build-cuda)" cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DSIXND_CUDA=ON -DSIXND_CUDA_ARCHS="80;90" >/dev/null
  build "CUDA (build-cuda)" cmake --build build-cuda -j"$JOBS" --target sixnd gpu_ops_test gpu_attention_test gpu_train_test gpu_muon_test gpu_nccl_test \
    attention_bench model_bench matmul_bench
  echo "== test (gpu label) ==" >&2
  ctest --test-dir build-cuda --output-on-failure -j"$JOBS" -L gpu || FAILED_PASSES+=("gpu (build-cuda)")
  # The gpu scripts (gpu_check.sh on a machine without a device, its table) have run against the
  # CUDA build; the CPU pass below would run them again without its binaries.
  CPU_PASS_EXCLUDE=(-LE gpu)
else
  echo "== CUDA: nvcc not found; the CUDA code was not compiled ==" >&2
fi

echo "== build (CPU, ASan + UBSan) ==" >&2
# -O1 -g1 (line tables: the sanitizers' stack traces keep file and line): this build was 22 of
# CI's 34 minutes at -O2 -g, and is 11 at -O1 -g1, while the tests take no longer. Like every
# build it is tuned for this CPU (-march=native), so the tests run the kernels this CPU runs.
ASAN_CONFIG=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  -DSIXND_SANITIZE=ON -DSIXND_CUDA=OFF)
# The benchmarks too: tests/bench runs their flag checks under the sanitizers.
build "CPU (build-asan)" cmake -S . -B build-asan "${ASAN_CONFIG[@]}" -DSIXND_BENCH=ON >/dev/null
build "CPU (build-asan)" cmake --build build-asan -j"$JOBS"

# On a CPU with AVX-512 BF16 the suite below runs the native BF16 matmuls; the path a CPU without
# BF16 arithmetic takes (BF16 on the packed GEMM in FP32 arithmetic, packed weight copies, oneDNN
# capped to AVX2) gets its own pass over the op and model tests here (under a minute), unless the
# whole suite already runs on it (SIXND_CPU_ISA=avx2; native or avx512_core leave that path untested).
# The AVX2 passes leave out an inherited SIXND_BF16_MATMUL: under the cap it can only say fp32, as
# auto does there, or bf16, which sixnd refuses without dot products (every test of the pass failed).
if [ "${SIXND_CPU_ISA:-}" != avx2 ]; then
  echo "== test (CPU ops and model on the AVX2 path: SIXND_CPU_ISA=avx2) ==" >&2
  env -u SIXND_BF16_MATMUL SIXND_CPU_ISA=avx2 ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout 1200 \
    -R '^(model\.(Cpu|Gpt|Decoder)|train\.Trainer\.)' || FAILED_PASSES+=("AVX2 path (build-asan, SIXND_CPU_ISA=avx2)")
fi

# Where the CPU has AVX-512, the build above holds the AVX-512 variants of the packed GEMM, the
# vector maths, AdamW and the bf16 conversions, so the pass above runs them in FP32 arithmetic;
# the AVX2 variants an AVX2-only CPU runs are compiled only in a build for x86-64-v3: their
# tests get one here, with the same sanitizers (3-4 minutes on 2 cores, most of it the build).
if grep -q -w avx512f /proc/cpuinfo && grep -q -w avx2 /proc/cpuinfo; then
  echo "== build (CPU for x86-64-v3, ASan + UBSan: the AVX2 variants) ==" >&2
  source scripts/avx2_path_tests.sh
  build "AVX2 variants (build-asan-avx2)" cmake -S . -B build-asan-avx2 "${ASAN_CONFIG[@]}" -DSIXND_BENCH=OFF -DSIXND_NATIVE=OFF \
    -DCMAKE_CXX_FLAGS=-march=x86-64-v3 >/dev/null
  build "AVX2 variants (build-asan-avx2)" cmake --build build-asan-avx2 -j"$JOBS" --target "${AVX2_PATH_TESTS[@]}"
  echo "== test (the AVX2 variants: x86-64-v3 build, SIXND_CPU_ISA=avx2) ==" >&2
  env -u SIXND_BF16_MATMUL SIXND_CPU_ISA=avx2 ctest --test-dir build-asan-avx2 --output-on-failure -j"$JOBS" --timeout 1200 \
    -LE script -E '_NOT_BUILT$' || FAILED_PASSES+=("AVX2 variants (build-asan-avx2)")
fi

echo "== test (CPU) ==" >&2
ctest --test-dir build-asan --output-on-failure -j"$JOBS" --timeout 1200 "${CPU_PASS_EXCLUDE[@]}" ||
  FAILED_PASSES+=("CPU (build-asan)")
if [ ${#FAILED_PASSES[@]} -gt 0 ]; then
  echo "test.sh: tests failed in: $(failed_passes)" >&2
  exit 1
fi
