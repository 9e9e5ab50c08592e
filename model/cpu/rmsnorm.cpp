// RMSNorm over the last dimension (eps 1e-5), no mean subtraction and no bias.
// forward:  per row (parallel over N): rstd = 1/sqrt(mean(x^2) + eps) in FP32,
//           out = x * rstd * w (w null: scale 1); rstd[N] is saved for backward.
// backward: with g = w dout and xhat = x rstd, per row
//           dinp += rstd * (g - xhat * mean(g xhat));
//           dweight[c] += sum_n dout xhat, summed over rows by column blocks, each block owned by
//           one thread and walked in row order (deterministic, rounded once).
#include <algorithm>

#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {
namespace {
constexpr float kEps = 1e-5f;
constexpr int kColumnBlock = 32;
}  // namespace

template <typename X>
void rmsnorm_forward(X* out, float* rstd, const X* inp, const X* weight, int N, int C) {
#pragma omp parallel for if(worth_threads(size_t(N) * C))
    for (int n = 0; n < N; n++) {
        const X* x = inp + static_cast<size_t>(n) * C;
        X* o = out + static_cast<size_t>(n) * C;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int c = 0; c < C; c++) ss += to_f32(x[c]) * to_f32(x[c]);
        const float r = norm_rstd(ss, x, C, 0.0f, kEps);
        rstd[n] = r;
        // Rounded through a float block (store_rounded), as layernorm_forward is.
        if (weight) store_rounded(o, C, [=](size_t c) { return to_f32(x[c]) * r * to_f32(weight[c]); });
        else store_rounded(o, C, [=](size_t c) { return to_f32(x[c]) * r; });
    }
}

template <typename X>
void rmsnorm_backward(X* dinp, X* dweight, const X* dout, const X* inp, const X* weight, const float* rstd, int N,
                      int C) {
    const int blocks = (C + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel if(worth_threads(size_t(N) * C))
    {
#pragma omp for nowait
        for (int n = 0; n < N; n++) {
            const size_t off = static_cast<size_t>(n) * C;
            const X* x = inp + off;
            const X* d = dout + off;
            const float r = rstd[n];
            float gx = 0.0f;
#pragma omp simd reduction(+ : gx)
            for (int c = 0; c < C; c++) {
                const float g = (weight ? to_f32(weight[c]) : 1.0f) * to_f32(d[c]);
                gx += g * to_f32(x[c]) * r;
            }
            gx /= C;
            X* di = dinp + off;
#pragma omp simd
            for (int c = 0; c < C; c++) {
                const float g = (weight ? to_f32(weight[c]) : 1.0f) * to_f32(d[c]);
                di[c] = from_f32<X>(to_f32(di[c]) + (g - to_f32(x[c]) * r * gx) * r);
            }
        }
        if (dweight) {
#pragma omp for
            for (int blk = 0; blk < blocks; blk++) {
                const int c0 = blk * kColumnBlock;
                const int w = std::min(kColumnBlock, C - c0);
                float dw[kColumnBlock] = {};
                for (int n = 0; n < N; n++) {
                    const size_t off = static_cast<size_t>(n) * C + c0;
                    const float r = rstd[n];
#pragma omp simd
                    for (int c = 0; c < w; c++) dw[c] += to_f32(inp[off + c]) * r * to_f32(dout[off + c]);
                }
                for (int c = 0; c < w; c++) dweight[c0 + c] = from_f32<X>(to_f32(dweight[c0 + c]) + dw[c]);
            }
        }
    }
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int, int);
template void rmsnorm_forward<bf16>(bf16*, float*, const bf16*, const bf16*, int, int);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*, int, int);
template void rmsnorm_backward<bf16>(bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*, int, int);

}  // namespace sixnd::cpu
