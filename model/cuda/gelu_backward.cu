// gelu_backward: dinp[n] = gelu'(x) * dout[n] for the tanh GELU (dinp may alias dout: each
// element is read before it is written, by the same thread).
//   u = sqrt(2/pi) (x + 0.044715 x^3);  gelu'(x) = 0.5 (1 + tanh u) + 0.5 x sech^2(u) sqrt(2/pi) (1 + 3*0.044715 x^2)
#include "model/cuda/elementwise.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

// Past |x| = 20 tanh is exactly +-1, so 1 - t^2 is 0 and the polynomial only matters by being
// finite: unclamped, x^2 overflows above ~1.8e19 and 0 * inf made the gradient NaN.
__device__ __forceinline__ float gelu_grad(float x) {
    const float s = 0.7978845608028654f;
    float u = s * (x + 0.044715f * x * x * x);
    float t = tanhf(u);
    const float xc = fminf(fmaxf(x, -20.0f), 20.0f);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * s * (1.0f + 3.0f * 0.044715f * xc * xc);
}

template <typename T, int P> __global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        float x[W], d[W];
        load_f32<W>(x, inp + i);
        load_f32<W>(d, dout + i);
#pragma unroll
        for (int k = 0; k < W; k++) d[k] *= gelu_grad(x[k]);
        store_f32<W>(dinp + i, d);
    });
}

}  // namespace

template <typename T> void gelu_backward(T* dinp, const T* inp, const T* dout, size_t n, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    launch_elementwise<P>("gelu_backward", aligned16(dinp) && aligned16(inp) && aligned16(dout),
                          gelu_backward_kernel<T, P>, gelu_backward_kernel<T, 1>, n, s, dinp, inp, dout, n);
}

template void gelu_backward<float>(float*, const float*, const float*, size_t, cudaStream_t);
template void gelu_backward<bf16>(bf16*, const bf16*, const bf16*, size_t, cudaStream_t);

}  // namespace sixnd::cuda
