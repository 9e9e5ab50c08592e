// ReLU squared, elementwise over n values (parallel, vectorised):
// forward out = max(x, 0)^2; backward dinp = 2 max(x, 0) dout (dinp may alias dout).
#include "model/cpu/kernels.h"

namespace sixnd::cpu {

template <typename X>
void relu2_forward(X* out, const X* inp, size_t n) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) {
        const float r = to_f32(inp[i]) < 0.0f ? 0.0f : to_f32(inp[i]);  // NaN passes through
        out[i] = from_f32<X>(r * r);
    }
}

template <typename X>
void relu2_backward(X* dinp, const X* inp, const X* dout, size_t n) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) {
        const float r = to_f32(inp[i]) < 0.0f ? 0.0f : to_f32(inp[i]);  // NaN passes through
        dinp[i] = from_f32<X>(2.0f * r * to_f32(dout[i]));
    }
}

template void relu2_forward<float>(float*, const float*, size_t);
template void relu2_forward<bf16>(bf16*, const bf16*, size_t);
template void relu2_backward<float>(float*, const float*, const float*, size_t);
template void relu2_backward<bf16>(bf16*, const bf16*, const bf16*, size_t);

}  // namespace sixnd::cpu
