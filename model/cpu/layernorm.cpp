// LayerNorm over the last dimension (eps 1e-5), optionally fused with the residual add before it.
// forward:  per row (parallel over N): mean, then variance of (x - mean) (two passes, FP32),
//           out = (x - mean) * rstd * w + b (b null: no bias); mean[N], rstd[N] saved for backward.
// backward: per row, dinp += rstd * (w dout - mean(w dout) - norm * mean(w dout norm));
//           dweight/dbias are summed over rows by column blocks, each block owned by one thread
//           and walked in row order, so the sums are deterministic and rounded once.
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {
namespace {

constexpr float kEps = 1e-5f;
constexpr int kColumnBlock = 32;

// w and b as floats: in bf16 widened once per call (widen_params), not once per row.
template <typename X>
void normalize_row(X* o, float* mean, float* rstd, const X* x, const float* w, const float* b, int C) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int c = 0; c < C; c++) s += to_f32(x[c]);
    const float m = s / C;
    float v = 0.0f;
#pragma omp simd reduction(+ : v)
    for (int c = 0; c < C; c++) {
        float d = to_f32(x[c]) - m;
        v += d * d;
    }
    const float r = norm_rstd(v, x, C, m, kEps);
    // Rounded through a float block (store_rounded): computed and rounded in one loop, bf16 took
    // 1.33x the FP32 time on AVX2, 1.24x this way.
    if (b) store_rounded(o, C, [=](size_t c) { return (to_f32(x[c]) - m) * r * w[c] + b[c]; });
    else store_rounded(o, C, [=](size_t c) { return (to_f32(x[c]) - m) * r * w[c]; });
    *mean = m;
    *rstd = r;
}

// The weight and bias (bias may be null) as floats: FP32's as they are; bf16's widened into buf
// (exact), so that the N rows read floats instead of each widening the same C values again
// (layernorm_forward in bf16 1.3x FP32's time on the AVX2 path, where each widening is two
// instructions).
template <typename X>
std::pair<const float*, const float*> widen_params(const X* w, const X* b, int C, std::vector<float>& buf) {
    if constexpr (std::is_same_v<X, float>) {
        return {w, b};
    } else {
        buf.resize(b ? 2 * static_cast<size_t>(C) : C);
        for (int c = 0; c < C; c++) buf[c] = to_f32(w[c]);
        if (b)
            for (int c = 0; c < C; c++) buf[C + c] = to_f32(b[c]);
        return {buf.data(), b ? buf.data() + C : nullptr};
    }
}

}  // namespace

template <typename X>
void layernorm_forward(X* out, float* mean, float* rstd, const X* inp, const X* weight, const X* bias, int N, int C) {
    std::vector<float> buf;
    const auto [w, b] = widen_params(weight, bias, C, buf);
#pragma omp parallel for if(worth_threads(size_t(N) * C))
    for (int n = 0; n < N; n++) {
        const size_t off = static_cast<size_t>(n) * C;
        normalize_row(out + off, mean + n, rstd + n, inp + off, w, b, C);
    }
}

template <typename X>
void residual_layernorm_forward(X* residual, X* out, float* mean, float* rstd, const X* inp1, const X* inp2,
                                const X* weight, const X* bias, int N, int C) {
    std::vector<float> buf;
    const auto [w, b] = widen_params(weight, bias, C, buf);
#pragma omp parallel for if(worth_threads(size_t(N) * C))
    for (int n = 0; n < N; n++) {
        const size_t off = static_cast<size_t>(n) * C;
        X* res = residual + off;
#pragma omp simd
        for (int c = 0; c < C; c++) res[c] = from_f32<X>(to_f32(inp1[off + c]) + to_f32(inp2[off + c]));
        // Normalise the stored (rounded) residual: it is what backward will see as the input.
        normalize_row(out + off, mean + n, rstd + n, res, w, b, C);
    }
}

template <typename X>
void layernorm_backward(X* dinp, X* dweight, X* dbias, const X* dout, const X* inp, const X* weight, const float* mean,
                        const float* rstd, int N, int C) {
    const int blocks = (C + kColumnBlock - 1) / kColumnBlock;
    std::vector<float> buf;
    const float* w = widen_params(weight, static_cast<const X*>(nullptr), C, buf).first;
#pragma omp parallel if(worth_threads(size_t(N) * C))
    {
#pragma omp for nowait
        for (int n = 0; n < N; n++) {
            const size_t off = static_cast<size_t>(n) * C;
            const X* x = inp + off;
            const X* d = dout + off;
            const float m = mean[n], r = rstd[n];
            float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_norm_mean)
            for (int c = 0; c < C; c++) {
                float dnorm = w[c] * to_f32(d[c]);
                dnorm_mean += dnorm;
                dnorm_norm_mean += dnorm * (to_f32(x[c]) - m) * r;
            }
            dnorm_mean /= C;
            dnorm_norm_mean /= C;
            X* di = dinp + off;
#pragma omp simd
            for (int c = 0; c < C; c++) {
                float norm = (to_f32(x[c]) - m) * r;
                float dnorm = w[c] * to_f32(d[c]);
                di[c] = from_f32<X>(to_f32(di[c]) + (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r);
            }
        }
#pragma omp for
        for (int blk = 0; blk < blocks; blk++) {
            const int c0 = blk * kColumnBlock;
            const int cols = std::min(kColumnBlock, C - c0);
            float dw[kColumnBlock] = {}, db[kColumnBlock] = {};
            for (int n = 0; n < N; n++) {
                const size_t off = static_cast<size_t>(n) * C + c0;
                const float m = mean[n], r = rstd[n];
#pragma omp simd
                for (int c = 0; c < cols; c++) {
                    float g = to_f32(dout[off + c]);
                    dw[c] += (to_f32(inp[off + c]) - m) * r * g;
                    db[c] += g;
                }
            }
            for (int c = 0; c < cols; c++) {
                dweight[c0 + c] = from_f32<X>(to_f32(dweight[c0 + c]) + dw[c]);
                if (dbias) dbias[c0 + c] = from_f32<X>(to_f32(dbias[c0 + c]) + db[c]);
            }
        }
    }
}

template void layernorm_forward<float>(float*, float*, float*, const float*, const float*, const float*, int, int);
template void layernorm_forward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*, int, int);
template void residual_layernorm_forward<float>(float*, float*, float*, float*, const float*, const float*,
                                                const float*, const float*, int, int);
template void residual_layernorm_forward<bf16>(bf16*, bf16*, float*, float*, const bf16*, const bf16*, const bf16*,
                                               const bf16*, int, int);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*, const float*,
                                        const float*, int, int);
template void layernorm_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*,
                                       const float*, int, int);

}  // namespace sixnd::cpu
