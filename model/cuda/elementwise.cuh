// One grid-wide elementwise launch: each thread takes P consecutive elements (a 16-byte packet
// when every pointer is 16-byte aligned), the last thread the ragged tail one by one.
#pragma once
#include "model/cuda/cuda_common.cuh"

namespace sixnd::cuda {

template <int P, typename T, typename F>
__device__ __forceinline__ void for_packet(size_t n, F&& f) {
    size_t base = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * P;
    if (base + P <= n) {
        f(base, std::integral_constant<int, P>());
    } else {
        for (size_t i = base; i < n; i++) f(i, std::integral_constant<int, 1>());
    }
}

}  // namespace sixnd::cuda
