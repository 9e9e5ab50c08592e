// Portable blocked GEMM: c[M,N] (+)= op(a)[M,K] @ op(b)[K,N] (+ bias), FP32 accumulation.
// c is cut into kMt x kNt tiles, one thread per tile (so no two threads touch one output and
// the sum order is fixed). For each kKb-deep slice of K the tile's panels of a and b are packed
// into FP32, zero-padded, k-major (which also absorbs the transposes and the bf16 widening), and
// a 4 x 16 register-blocked micro-kernel the compiler vectorises accumulates into the tile.
#include <algorithm>
#include <vector>

#include "model/cpu/kernels.h"
#include "model/cpu/matmul.h"

namespace sixnd::cpu {
namespace {

constexpr int kMt = 64, kNt = 64, kKb = 64;
constexpr int kMr = 4, kNr = 16;

// acc[kMt][kNt] += the kb-deep panel product; ap[k][kMt] is column k of the a panel, bp[k][kNt]
// row k of the b panel.
void micro_tile(float* acc, const float* ap, const float* bp, int kb) {
    for (int i = 0; i < kMt; i += kMr) {
        for (int j = 0; j < kNt; j += kNr) {
            float c[kMr][kNr];
            for (int r = 0; r < kMr; r++)
                for (int s = 0; s < kNr; s++) c[r][s] = acc[(i + r) * kNt + j + s];
            for (int k = 0; k < kb; k++) {
                const float* a = ap + k * kMt + i;
                const float* b = bp + k * kNt + j;
                for (int r = 0; r < kMr; r++) {
                    const float av = a[r];
#pragma omp simd
                    for (int s = 0; s < kNr; s++) c[r][s] += av * b[s];
                }
            }
            for (int r = 0; r < kMr; r++)
                for (int s = 0; s < kNr; s++) acc[(i + r) * kNt + j + s] = c[r][s];
        }
    }
}

// Packs the [k0, k0+kb) x [i0, i0+rows) block of a matrix with `len` rows or columns along i into
// dst[k][width] (FP32, k-major). k_major: the source is stored [K][len]; else [len][K]. The loop
// order follows the source so that reads are contiguous.
template <typename X>
void pack(float* dst, int width, const X* src, bool k_major, int len, int K, int i0, int rows, int k0, int kb) {
    if (k_major) {
        for (int k = 0; k < kb; k++) {
            const X* s = src + static_cast<size_t>(k0 + k) * len + i0;
            for (int r = 0; r < rows; r++) dst[k * width + r] = to_f32(s[r]);
        }
    } else {
        for (int r = 0; r < rows; r++) {
            const X* s = src + static_cast<size_t>(i0 + r) * K + k0;
            for (int k = 0; k < kb; k++) dst[k * width + r] = to_f32(s[k]);
        }
    }
}

template <typename X>
void gemm(X* c, const X* a, const X* b, const X* bias, const GemmShape& sh) {
    const int M = sh.M, N = sh.N, K = sh.K;
    const int mt = (M + kMt - 1) / kMt, nt = (N + kNt - 1) / kNt;
#pragma omp parallel if(worth_threads(size_t(M) * N * K))
    {
        std::vector<float> acc(kMt * kNt), ap(static_cast<size_t>(kKb) * kMt), bp(static_cast<size_t>(kKb) * kNt);
#pragma omp for collapse(2) schedule(static)
        for (int ti = 0; ti < mt; ti++) {
            for (int tj = 0; tj < nt; tj++) {
                const int i0 = ti * kMt, j0 = tj * kNt;
                const int rows = std::min(kMt, M - i0), cols = std::min(kNt, N - j0);
                std::fill(acc.begin(), acc.end(), 0.0f);
                std::fill(ap.begin(), ap.end(), 0.0f);
                std::fill(bp.begin(), bp.end(), 0.0f);
                for (int k0 = 0; k0 < K; k0 += kKb) {
                    const int kb = std::min(kKb, K - k0);
                    pack(ap.data(), kMt, a, sh.a_trans, M, K, i0, rows, k0, kb);
                    pack(bp.data(), kNt, b, !sh.b_trans, N, K, j0, cols, k0, kb);
                    micro_tile(acc.data(), ap.data(), bp.data(), kb);
                }
                for (int r = 0; r < rows; r++) {
                    X* crow = c + static_cast<size_t>(i0 + r) * N + j0;
                    for (int s = 0; s < cols; s++) {
                        float x = acc[r * kNt + s];
                        if (bias) x += to_f32(bias[j0 + s]);
                        if (sh.accumulate) x += to_f32(crow[s]);
                        crow[s] = from_f32<X>(x);
                    }
                }
            }
        }
    }
}

}  // namespace

void gemm_portable(DType dtype, void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
    if (dtype == DType::f32)
        gemm(static_cast<float*>(c), static_cast<const float*>(a), static_cast<const float*>(b),
             static_cast<const float*>(bias), s);
    else
        gemm(static_cast<bf16*>(c), static_cast<const bf16*>(a), static_cast<const bf16*>(b),
             static_cast<const bf16*>(bias), s);
}

}  // namespace sixnd::cpu
