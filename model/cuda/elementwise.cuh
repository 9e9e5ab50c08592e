// One grid-wide elementwise launch: each thread takes P consecutive elements (a 16-byte packet
// when every pointer is 16-byte aligned), the last thread the ragged tail one by one.
// for_packet is the kernels' side; launch_elementwise the launchers' (which instantiation runs,
// how many blocks, and the launch check).
#pragma once
#include <type_traits>
#include <utility>

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

// Runs an elementwise kernel over n elements on s and checks the launch under `name`: the
// P-element instantiation `packed` over ceil(n / P) threads when `packed_ok` (every pointer
// 16-byte aligned, and whatever else the caller's packets need, e.g. rows a whole number of
// packets), else the one-element instantiation `scalar` over n threads. Both take `args`.
// Blocks of 256; the thread count is worked out in size_t before it becomes a block count.
template <int P, typename... Params, typename... Args>
void launch_elementwise(const char* name, bool packed_ok, void (*packed)(Params...), void (*scalar)(Params...),
                        size_t n, cudaStream_t s, Args&&... args) {
    constexpr int block = 256;
    if (n == 0) return;  // a grid of no blocks is a launch error; the CPU twins do nothing
    if (packed_ok) packed<<<ceil_div((n + P - 1) / P, block), block, 0, s>>>(std::forward<Args>(args)...);
    else scalar<<<ceil_div(n, block), block, 0, s>>>(std::forward<Args>(args)...);
    SIXND_CUDA_LAUNCHED(name);
}

}  // namespace sixnd::cuda
