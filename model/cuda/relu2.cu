// relu2_forward:  out[n] = max(x, 0)^2
// relu2_backward: dinp[n] = 2 max(x, 0) * dout[n]   (dinp may alias dout: each element is read
// before it is written, by the same thread)
// Elementwise over n, 16-byte packets when every pointer is aligned; FP32 math.
#include "model/cuda/elementwise.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T, int P> __global__ void relu2_forward_kernel(T* out, const T* inp, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        float x[W];
        load_f32<W>(x, inp + i);
#pragma unroll
        for (int k = 0; k < W; k++) {
            float r = fmaxf(x[k], 0.0f);
            x[k] = r * r;
        }
        store_f32<W>(out + i, x);
    });
}

template <typename T, int P> __global__ void relu2_backward_kernel(T* dinp, const T* inp, const T* dout, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        float x[W], d[W];
        load_f32<W>(x, inp + i);
        load_f32<W>(d, dout + i);
#pragma unroll
        for (int k = 0; k < W; k++) d[k] *= 2.0f * fmaxf(x[k], 0.0f);
        store_f32<W>(dinp + i, d);
    });
}

}  // namespace

template <typename T> void relu2_forward(T* out, const T* inp, size_t n, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    launch_elementwise<P>("relu2_forward", aligned16(out) && aligned16(inp), relu2_forward_kernel<T, P>,
                          relu2_forward_kernel<T, 1>, n, s, out, inp, n);
}

template <typename T> void relu2_backward(T* dinp, const T* inp, const T* dout, size_t n, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    launch_elementwise<P>("relu2_backward", aligned16(dinp) && aligned16(inp) && aligned16(dout),
                          relu2_backward_kernel<T, P>, relu2_backward_kernel<T, 1>, n, s, dinp, inp, dout, n);
}

template void relu2_forward<float>(float*, const float*, size_t, cudaStream_t);
template void relu2_forward<bf16>(bf16*, const bf16*, size_t, cudaStream_t);
template void relu2_backward<float>(float*, const float*, const float*, size_t, cudaStream_t);
template void relu2_backward<bf16>(bf16*, const bf16*, const bf16*, size_t, cudaStream_t);

}  // namespace sixnd::cuda
