// Residual add, elementwise over n values: out = a + b (parallel, vectorised).
#include "model/cpu/kernels.h"

namespace sixnd::cpu {

template <typename X>
void residual_forward(X* out, const X* a, const X* b, size_t n) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) out[i] = from_f32<X>(to_f32(a[i]) + to_f32(b[i]));
}

template void residual_forward<float>(float*, const float*, const float*, size_t);
template void residual_forward<bf16>(bf16*, const bf16*, const bf16*, size_t);

}  // namespace sixnd::cpu
