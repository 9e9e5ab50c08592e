// QK-norm: every query and key head vector of qkv[N, C + 2*NKV*hs] RMS-normalised (eps 1e-5,
// no weight); values copied. The q heads and k heads are adjacent in a row ([0, C + NKV*hs)),
// so a row is NH + NKV head vectors of hs values followed by the values' NKV*hs.
// forward:  per (row, head) (parallel over rows): rstd = 1/sqrt(mean(x^2) + eps), out = x rstd;
//           rstd[N, NH+NKV] saved.
// backward: per head vector, xhat = x rstd: dinp = rstd (dout - xhat mean(dout xhat)); the
//           values' gradient passes through. dqkv is overwritten.
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {
namespace {
constexpr float kEps = 1e-5f;
}

template <typename X>
void qk_norm_forward(X* out, float* rstd, const X* qkv, int N, int C, int NH, int NKV) {
    const int hs = C / NH, heads = NH + NKV, W = C + 2 * NKV * hs;
#pragma omp parallel for if(worth_threads(size_t(N) * W))
    for (int n = 0; n < N; n++) {
        const X* x = qkv + static_cast<size_t>(n) * W;
        X* o = out + static_cast<size_t>(n) * W;
        for (int j = 0; j < heads; j++) {
            const X* xh = x + static_cast<size_t>(j) * hs;
            float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
            for (int i = 0; i < hs; i++) ss += to_f32(xh[i]) * to_f32(xh[i]);
            const float r = norm_rstd(ss, xh, hs, 0.0f, kEps);
            rstd[static_cast<size_t>(n) * heads + j] = r;
            X* oh = o + static_cast<size_t>(j) * hs;
#pragma omp simd
            for (int i = 0; i < hs; i++) oh[i] = from_f32<X>(to_f32(xh[i]) * r);
        }
        for (int i = heads * hs; i < W; i++) o[i] = x[i];
    }
}

template <typename X>
void qk_norm_backward(X* dqkv, const X* dout, const X* qkv, const float* rstd, int N, int C, int NH, int NKV) {
    const int hs = C / NH, heads = NH + NKV, W = C + 2 * NKV * hs;
#pragma omp parallel for if(worth_threads(size_t(N) * W))
    for (int n = 0; n < N; n++) {
        const size_t row = static_cast<size_t>(n) * W;
        for (int j = 0; j < heads; j++) {
            const size_t off = row + static_cast<size_t>(j) * hs;
            const float r = rstd[static_cast<size_t>(n) * heads + j];
            float dx = 0.0f;
#pragma omp simd reduction(+ : dx)
            for (int i = 0; i < hs; i++) dx += to_f32(dout[off + i]) * to_f32(qkv[off + i]) * r;
            dx /= hs;
#pragma omp simd
            for (int i = 0; i < hs; i++)
                dqkv[off + i] = from_f32<X>(r * (to_f32(dout[off + i]) - to_f32(qkv[off + i]) * r * dx));
        }
        for (int i = heads * hs; i < W; i++) dqkv[row + i] = dout[row + i];
    }
}

template void qk_norm_forward<float>(float*, float*, const float*, int, int, int, int);
template void qk_norm_forward<bf16>(bf16*, float*, const bf16*, int, int, int, int);
template void qk_norm_backward<float>(float*, const float*, const float*, const float*, int, int, int, int);
template void qk_norm_backward<bf16>(bf16*, const bf16*, const bf16*, const float*, int, int, int, int);

}  // namespace sixnd::cpu
