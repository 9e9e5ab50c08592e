// encoder_forward: out[B,T,C] = wte[inp[b,t], :] + wpe[t, :] (wpe null: no position table, RoPE).
// One thread per 16-byte packet of out (C a multiple of the packet) or per element otherwise;
// the embedding tables stay in L2, so the kernel runs at the speed of the write.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T>
__global__ void encoder_forward_packed(T* out, const int32_t* inp, const T* wte, const T* wpe, int T_, int C,
                                       size_t packets) {
    constexpr int P = Packed128<T>::size;
    size_t i = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x);
    if (i >= packets) return;
    size_t idx = i * P;
    size_t bt = idx / C;
    int c = static_cast<int>(idx % C);
    int t = static_cast<int>(bt % T_);
    int tok = inp[bt];
    Packed128<T> a = load128(wte + static_cast<size_t>(tok) * C + c);
    if (wpe) {
        Packed128<T> b = load128(wpe + static_cast<size_t>(t) * C + c);
#pragma unroll
        for (int k = 0; k < P; k++) a[k] = from_float<T>(to_float(a[k]) + to_float(b[k]));
    }
    store128(out + idx, a);
}

template <typename T>
__global__ void encoder_forward_scalar(T* out, const int32_t* inp, const T* wte, const T* wpe, int T_, int C,
                                       size_t n) {
    size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= n) return;
    size_t bt = idx / C;
    int c = static_cast<int>(idx % C);
    int t = static_cast<int>(bt % T_);
    out[idx] = from_float<T>(to_float(wte[static_cast<size_t>(inp[bt]) * C + c]) +
                             (wpe ? to_float(wpe[static_cast<size_t>(t) * C + c]) : 0.0f));
}

}  // namespace

template <typename T>
void encoder_forward(T* out, const int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    size_t n = static_cast<size_t>(B) * T_ * C;
    const int block = 256;
    if (C % P == 0 && aligned16(out) && aligned16(wte) && (!wpe || aligned16(wpe))) {
        encoder_forward_packed<<<ceil_div(n / P, block), block, 0, s>>>(out, inp, wte, wpe, T_, C, n / P);
    } else {
        encoder_forward_scalar<<<ceil_div(n, block), block, 0, s>>>(out, inp, wte, wpe, T_, C, n);
    }
    SIXND_CUDA_LAUNCHED("encoder_forward");
}

template void encoder_forward<float>(float*, const int32_t*, const float*, const float*, int, int, int, cudaStream_t);
template void encoder_forward<bf16>(bf16*, const int32_t*, const bf16*, const bf16*, int, int, int, cudaStream_t);

}  // namespace sixnd::cuda
