// Storage conversion of n values: float <-> bf16 (round to nearest even), or a plain copy when
// the types match. Parallel, vectorised.
#include "model/cpu/kernels.h"

namespace sixnd::cpu {

template <typename D, typename S>
void cast(D* dst, const S* src, size_t n) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) dst[i] = from_f32<D>(to_f32(src[i]));
}

template void cast<float, float>(float*, const float*, size_t);
template void cast<float, bf16>(float*, const bf16*, size_t);
template void cast<bf16, float>(bf16*, const float*, size_t);
template void cast<bf16, bf16>(bf16*, const bf16*, size_t);

}  // namespace sixnd::cpu
