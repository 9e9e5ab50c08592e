// gelu_forward: out[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the GPT-2 tanh form.
// Elementwise, 16-byte packets when aligned; FP32 math.
#include "model/cuda/elementwise.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__device__ __forceinline__ float gelu(float x) {
    const float s = 0.7978845608028654f;  // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
}

template <typename T, int P> __global__ void gelu_forward_kernel(T* out, const T* inp, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        float x[W];
        load_f32<W>(x, inp + i);
#pragma unroll
        for (int k = 0; k < W; k++) x[k] = gelu(x[k]);
        store_f32<W>(out + i, x);
    });
}

}  // namespace

template <typename T> void gelu_forward(T* out, const T* inp, size_t n, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    launch_elementwise<P>("gelu_forward", aligned16(out) && aligned16(inp), gelu_forward_kernel<T, P>,
                          gelu_forward_kernel<T, 1>, n, s, out, inp, n);
}

template void gelu_forward<float>(float*, const float*, size_t, cudaStream_t);
template void gelu_forward<bf16>(bf16*, const bf16*, size_t, cudaStream_t);

}  // namespace sixnd::cuda
