// Linear layer (weights [OC,C] row-major, out = inp @ W^T + b) on top of the Matmul engine.
// forward:  out[N,OC] = inp[N,C] @ W^T + b; with the GELU epilogue the product goes to pre_gelu
//           and out = gelu(pre_gelu) (both are kept for backward).
// backward: dinp[N,C] = dout @ W;  dweight[OC,C] += dout^T @ inp (the engine's accumulate form);
//           dbias[OC] += column sums of dout, by column blocks each owned by one thread and
//           walked in row order (deterministic, FP32, rounded once).
#include <algorithm>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {

constexpr int kColumnBlock = 64;

template <typename X>
void bias_backward(X* dbias, const X* dout, int N, int OC) {
    const int blocks = (OC + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if(worth_threads(size_t(N) * OC))
    for (int blk = 0; blk < blocks; blk++) {
        const int o0 = blk * kColumnBlock;
        const int w = std::min(kColumnBlock, OC - o0);
        float acc[kColumnBlock] = {};
        for (int n = 0; n < N; n++) {
            const X* row = dout + static_cast<size_t>(n) * OC + o0;
#pragma omp simd
            for (int o = 0; o < w; o++) acc[o] += to_f32(row[o]);
        }
        for (int o = 0; o < w; o++) dbias[o0 + o] = from_f32<X>(to_f32(dbias[o0 + o]) + acc[o]);
    }
}

}  // namespace

template <typename X>
void matmul_forward(Matmul& mm, X* out, X* pre_gelu, const X* inp, const X* weight, const X* bias, int N, int C,
                    int OC) {
    mm.run(pre_gelu ? pre_gelu : out, inp, weight, bias, GemmShape{N, OC, C, false, true, false, true},
           pre_gelu ? out : nullptr);
}

template <typename X>
void matmul_backward(Matmul& mm, X* dinp, X* dweight, X* dbias, const X* dout, const X* inp, const X* weight, int N,
                     int C, int OC) {
    if (dinp) mm.run(dinp, dout, weight, nullptr, GemmShape{N, C, OC, false, false, false, true});
    mm.run(dweight, dout, inp, nullptr, GemmShape{OC, C, N, true, false, true});
    if (dbias) bias_backward(dbias, dout, N, OC);
}

template void matmul_forward<float>(Matmul&, float*, float*, const float*, const float*, const float*, int, int, int);
template void matmul_forward<bf16>(Matmul&, bf16*, bf16*, const bf16*, const bf16*, const bf16*, int, int, int);
template void matmul_backward<float>(Matmul&, float*, float*, float*, const float*, const float*, const float*, int,
                                     int, int);
template void matmul_backward<bf16>(Matmul&, bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*, int, int, int);

}  // namespace sixnd::cpu
