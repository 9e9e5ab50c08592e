// GELU, tanh approximation, elementwise over n values (parallel, vectorised):
// forward out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); backward dinp = gelu'(x) dout.
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

template <typename X>
void gelu_forward(X* out, const X* inp, size_t n) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) out[i] = from_f32<X>(gelu(to_f32(inp[i])));
}

// dinp may alias dout (the model overwrites the gradient in place), so no restrict here.
template <typename X>
void gelu_backward(X* dinp, const X* inp, const X* dout, size_t n) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) dinp[i] = from_f32<X>(gelu_grad(to_f32(inp[i])) * to_f32(dout[i]));
}

template void gelu_forward<float>(float*, const float*, size_t);
template void gelu_forward<bf16>(bf16*, const bf16*, size_t);
template void gelu_backward<float>(float*, const float*, const float*, size_t);
template void gelu_backward<bf16>(bf16*, const bf16*, const bf16*, size_t);

}  // namespace sixnd::cpu
