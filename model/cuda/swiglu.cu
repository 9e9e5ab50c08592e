// swiglu_forward:  inp[N,2H] = [gate | up] per row;  out[N,H] = silu(gate) * up,
//                  silu(g) = g * sigmoid(g)
// swiglu_backward: dinp[N,2H] (overwritten) from dout[N,H]:
//                  dgate = dout * up * sigmoid(g) (1 + g (1 - sigmoid(g)));  dup = dout * silu(g)
// Elementwise over the N*H outputs; each thread takes P consecutive columns of one row (a
// 16-byte packet when H is a multiple of the packet size and the pointers are aligned, so a
// packet never straddles two rows), FP32 math.
#include "model/cuda/elementwise.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

template <typename T, int P> __global__ void swiglu_forward_kernel(T* out, const T* inp, int H, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        const size_t row = i / H, col = i % H;
        const T* gate = inp + row * 2 * H + col;
        float g[W], u[W];
        load_f32<W>(g, gate);
        load_f32<W>(u, gate + H);
#pragma unroll
        for (int k = 0; k < W; k++) g[k] = g[k] * sigmoid(g[k]) * u[k];
        store_f32<W>(out + i, g);
    });
}

template <typename T, int P>
__global__ void swiglu_backward_kernel(T* dinp, const T* inp, const T* dout, int H, size_t n) {
    for_packet<P, T>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        const size_t row = i / H, col = i % H, at = row * 2 * H + col;
        float g[W], u[W], d[W];
        load_f32<W>(g, inp + at);
        load_f32<W>(u, inp + at + H);
        load_f32<W>(d, dout + i);
        float dg[W], du[W];
#pragma unroll
        for (int k = 0; k < W; k++) {
            float sg = sigmoid(g[k]);
            dg[k] = d[k] * u[k] * sg * (1.0f + g[k] * (1.0f - sg));
            du[k] = d[k] * g[k] * sg;
        }
        store_f32<W>(dinp + at, dg);
        store_f32<W>(dinp + at + H, du);
    });
}

}  // namespace

template <typename T> void swiglu_forward(T* out, const T* inp, int N, int H, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const size_t n = static_cast<size_t>(N) * H;
    launch_elementwise<P>("swiglu_forward", H % P == 0 && aligned16(out) && aligned16(inp),
                          swiglu_forward_kernel<T, P>, swiglu_forward_kernel<T, 1>, n, s, out, inp, H, n);
}

template <typename T> void swiglu_backward(T* dinp, const T* inp, const T* dout, int N, int H, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const size_t n = static_cast<size_t>(N) * H;
    launch_elementwise<P>("swiglu_backward", H % P == 0 && aligned16(dinp) && aligned16(inp) && aligned16(dout),
                          swiglu_backward_kernel<T, P>, swiglu_backward_kernel<T, 1>, n, s, dinp, inp, dout, H, n);
}

template void swiglu_forward<float>(float*, const float*, int, int, cudaStream_t);
template void swiglu_forward<bf16>(bf16*, const bf16*, int, int, cudaStream_t);
template void swiglu_backward<float>(float*, const float*, const float*, int, int, cudaStream_t);
template void swiglu_backward<bf16>(bf16*, const bf16*, const bf16*, int, int, cudaStream_t);

}  // namespace sixnd::cuda
