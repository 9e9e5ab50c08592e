// residual_forward: out[n] = a[n] + b[n]. Elementwise, 16-byte packets when aligned.
#include "model/cuda/elementwise.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T, int P> __global__ void residual_forward_kernel(T* out, const T* a, const T* b, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        float x[W], y[W];
        load_f32<W>(x, a + i);
        load_f32<W>(y, b + i);
#pragma unroll
        for (int k = 0; k < W; k++) x[k] += y[k];
        store_f32<W>(out + i, x);
    });
}

}  // namespace

template <typename T> void residual_forward(T* out, const T* a, const T* b, size_t n, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    launch_elementwise<P>("residual_forward", aligned16(out) && aligned16(a) && aligned16(b),
                          residual_forward_kernel<T, P>, residual_forward_kernel<T, 1>, n, s, out, a, b, n);
}

template void residual_forward<float>(float*, const float*, const float*, size_t, cudaStream_t);
template void residual_forward<bf16>(bf16*, const bf16*, const bf16*, size_t, cudaStream_t);

}  // namespace sixnd::cuda
