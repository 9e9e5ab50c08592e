// rmsnorm_forward:  out[N,C] = x * rstd * weight, rstd[N] = 1/sqrt(mean_c(x^2) + 1e-5) saved;
//                   weight null: scale 1.
// rmsnorm_backward: n = x * rstd;  g = weight * dout
//                   dinp[N,C] += (g - n * mean_c(g * n)) * rstd
//                   dweight[C] += sum_n dout * n   (deterministic column sums, norm_weight_grads.cu;
//                   dweight null when weight is null)
// Both row kernels: one warp per row, each lane owning P-element packets (16 bytes when C and
// the pointers allow); two passes over the row, the second hitting L1. FP32 statistics.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T, int P>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* weight, int N, int C) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    float ss = 0.0f;
    for (int c = lane * P; c < C; c += 32 * P) {
        float a[P];
        load_f32<P>(a, inp + off + c);
#pragma unroll
        for (int k = 0; k < P; k++) ss += a[k] * a[k];
    }
    const float r = warp_norm_rstd<P>(ss, inp + off, C, 0.0f, 1e-5f, lane);
    for (int c = lane * P; c < C; c += 32 * P) {
        float a[P], w[P];
        load_f32<P>(a, inp + off + c);
        if (weight) load_f32<P>(w, weight + c);
        // (x * r) * w, the CPU twin's order (not x * (r * w)), so the products round alike.
#pragma unroll
        for (int k = 0; k < P; k++) a[k] = weight ? a[k] * r * w[k] : a[k] * r;
        store_f32<P>(out + off + c, a);
    }
    if (lane == 0) rstd[row] = r;
}

template <typename T, int P>
__global__ void rmsnorm_backward_dinp(T* dinp, const T* dout, const T* inp, const T* weight, const float* rstd, int N,
                                      int C) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const size_t off = static_cast<size_t>(row) * C;
    const float r = rstd[row];
    float gn = 0.0f;
    for (int c = lane * P; c < C; c += 32 * P) {
        float x[P], d[P], w[P];
        load_f32<P>(x, inp + off + c);
        load_f32<P>(d, dout + off + c);
        if (weight) load_f32<P>(w, weight + c);
#pragma unroll
        for (int k = 0; k < P; k++) gn += (weight ? w[k] * d[k] : d[k]) * x[k] * r;
    }
    const float gnmean = warp_sum(gn) / C;
    for (int c = lane * P; c < C; c += 32 * P) {
        float x[P], d[P], w[P], o[P];
        load_f32<P>(x, inp + off + c);
        load_f32<P>(d, dout + off + c);
        if (weight) load_f32<P>(w, weight + c);
        load_f32<P>(o, dinp + off + c);
#pragma unroll
        for (int k = 0; k < P; k++) o[k] += ((weight ? w[k] * d[k] : d[k]) - x[k] * r * gnmean) * r;
        store_f32<P>(dinp + off + c, o);
    }
}

}  // namespace

template <typename T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int N, int C, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const int block = 256, rows_per_block = block / 32;
    if (C % P == 0 && aligned16(out) && aligned16(inp) && aligned16(weight))
        rmsnorm_forward_kernel<T, P><<<ceil_div(N, rows_per_block), block, 0, s>>>(out, rstd, inp, weight, N, C);
    else
        rmsnorm_forward_kernel<T, 1><<<ceil_div(N, rows_per_block), block, 0, s>>>(out, rstd, inp, weight, N, C);
    SIXND_CUDA_LAUNCHED("rmsnorm_forward");
}

template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const float* rstd, int N,
                      int C, Scratch& scratch, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const int block = 256, rows_per_block = block / 32;
    if (C % P == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) && aligned16(weight))
        rmsnorm_backward_dinp<T, P><<<ceil_div(N, rows_per_block), block, 0, s>>>(dinp, dout, inp, weight, rstd, N, C);
    else
        rmsnorm_backward_dinp<T, 1><<<ceil_div(N, rows_per_block), block, 0, s>>>(dinp, dout, inp, weight, rstd, N, C);
    SIXND_CUDA_LAUNCHED("rmsnorm_backward_dinp");
    if (dweight) norm_weight_grads<T>(dweight, nullptr, dout, inp, nullptr, rstd, N, C, scratch, s);
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*, int, int, cudaStream_t);
template void rmsnorm_forward<bf16>(bf16*, float*, const bf16*, const bf16*, int, int, cudaStream_t);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*, const float*, int, int,
                                      Scratch&, cudaStream_t);
template void rmsnorm_backward<bf16>(bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*, int, int,
                                     Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
