// SwiGLU: inp[N, 2H] = [gate | up] per row; out[N, H] = silu(gate) * up, silu(g) = g sigmoid(g).
// backward (dinp overwritten), with s = sigmoid(g):
//   dgate = dout * up * s (1 + g (1 - s));  dup = dout * silu(g).
// Parallel over rows, FP32 math, exp_fast for the sigmoid.
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

template <typename X>
void swiglu_forward(X* out, const X* inp, int N, int H) {
#pragma omp parallel for if(worth_threads(size_t(N) * H))
    for (int n = 0; n < N; n++) {
        const X* g = inp + static_cast<size_t>(n) * 2 * H;
        const X* u = g + H;
        X* o = out + static_cast<size_t>(n) * H;
#pragma omp simd
        for (int j = 0; j < H; j++) {
            const float gj = to_f32(g[j]);
            const float s = 1.0f / (1.0f + exp_fast(-gj));
            o[j] = from_f32<X>(gj * s * to_f32(u[j]));
        }
    }
}

template <typename X>
void swiglu_backward(X* dinp, const X* inp, const X* dout, int N, int H) {
#pragma omp parallel for if(worth_threads(size_t(N) * H))
    for (int n = 0; n < N; n++) {
        const X* g = inp + static_cast<size_t>(n) * 2 * H;
        const X* u = g + H;
        const X* d = dout + static_cast<size_t>(n) * H;
        X* dg = dinp + static_cast<size_t>(n) * 2 * H;
        X* du = dg + H;
#pragma omp simd
        for (int j = 0; j < H; j++) {
            const float gj = to_f32(g[j]), dj = to_f32(d[j]);
            const float s = 1.0f / (1.0f + exp_fast(-gj));
            dg[j] = from_f32<X>(dj * to_f32(u[j]) * s * (1.0f + gj * (1.0f - s)));
            du[j] = from_f32<X>(dj * gj * s);
        }
    }
}

template void swiglu_forward<float>(float*, const float*, int, int);
template void swiglu_forward<bf16>(bf16*, const bf16*, int, int);
template void swiglu_backward<float>(float*, const float*, const float*, int, int);
template void swiglu_backward<bf16>(bf16*, const bf16*, const bf16*, int, int);

}  // namespace sixnd::cpu
