// qk_norm_forward:  qkv[N, (NH + 2 NKV) hs] = [q heads | k heads | v heads]; out = qkv with each of
//                   the NH + NKV q and k head vectors RMS-normalised (no weight, eps 1e-5):
//                   out = x * r, r = 1/sqrt(mean_d(x^2) + 1e-5) saved in rstd[N, NH + NKV]; v copied.
// qk_norm_backward: dqkv (overwritten) from dout, per normalised head vector with n = x * r:
//                   dx = (dout - n * mean_d(dout * n)) * r;  v: dx = dout.
// One warp per (row, head vector), lanes owning P-element packets of the hs values (16 bytes
// when hs and the pointers allow); two passes, the second hitting L1. FP32 statistics.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T, int P>
__global__ void qk_norm_forward_kernel(T* out, float* rstd, const T* qkv, int N, int hs, int heads, int normed) {
    const size_t w = static_cast<size_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (w >= static_cast<size_t>(N) * heads) return;
    const size_t n = w / heads;
    const int j = static_cast<int>(w % heads);
    const size_t off = w * hs;  // rows are `heads` head vectors wide
    if (j >= normed) {
        for (int d = lane * P; d < hs; d += 32 * P) {
            float a[P];
            load_f32<P>(a, qkv + off + d);
            store_f32<P>(out + off + d, a);
        }
        return;
    }
    float ss = 0.0f;
    for (int d = lane * P; d < hs; d += 32 * P) {
        float a[P];
        load_f32<P>(a, qkv + off + d);
#pragma unroll
        for (int k = 0; k < P; k++) ss += a[k] * a[k];
    }
    const float r = warp_norm_rstd<P>(ss, qkv + off, hs, 0.0f, 1e-5f, lane);
    for (int d = lane * P; d < hs; d += 32 * P) {
        float a[P];
        load_f32<P>(a, qkv + off + d);
#pragma unroll
        for (int k = 0; k < P; k++) a[k] *= r;
        store_f32<P>(out + off + d, a);
    }
    if (lane == 0) rstd[n * normed + j] = r;
}

template <typename T, int P>
__global__ void qk_norm_backward_kernel(T* dqkv, const T* dout, const T* qkv, const float* rstd, int N, int hs,
                                        int heads, int normed) {
    const size_t w = static_cast<size_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (w >= static_cast<size_t>(N) * heads) return;
    const size_t n = w / heads;
    const int j = static_cast<int>(w % heads);
    const size_t off = w * hs;
    if (j >= normed) {
        for (int d = lane * P; d < hs; d += 32 * P) {
            float a[P];
            load_f32<P>(a, dout + off + d);
            store_f32<P>(dqkv + off + d, a);
        }
        return;
    }
    const float r = rstd[n * normed + j];
    float dn = 0.0f;
    for (int d = lane * P; d < hs; d += 32 * P) {
        float x[P], g[P];
        load_f32<P>(x, qkv + off + d);
        load_f32<P>(g, dout + off + d);
#pragma unroll
        for (int k = 0; k < P; k++) dn += g[k] * x[k] * r;
    }
    const float dnmean = warp_sum(dn) / hs;
    for (int d = lane * P; d < hs; d += 32 * P) {
        float x[P], g[P];
        load_f32<P>(x, qkv + off + d);
        load_f32<P>(g, dout + off + d);
#pragma unroll
        for (int k = 0; k < P; k++) g[k] = (g[k] - x[k] * r * dnmean) * r;
        store_f32<P>(dqkv + off + d, g);
    }
}

}  // namespace

template <typename T>
void qk_norm_forward(T* out, float* rstd, const T* qkv, int N, int C, int NH, int NKV, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const int hs = C / NH, heads = NH + 2 * NKV, warps_per_block = 8;
    const int grid = ceil_div(static_cast<size_t>(N) * heads, warps_per_block);
    if (hs % P == 0 && aligned16(out) && aligned16(qkv))
        qk_norm_forward_kernel<T, P><<<grid, 32 * warps_per_block, 0, s>>>(out, rstd, qkv, N, hs, heads, NH + NKV);
    else
        qk_norm_forward_kernel<T, 1><<<grid, 32 * warps_per_block, 0, s>>>(out, rstd, qkv, N, hs, heads, NH + NKV);
    SIXND_CUDA_LAUNCHED("qk_norm_forward");
}

template <typename T>
void qk_norm_backward(T* dqkv, const T* dout, const T* qkv, const float* rstd, int N, int C, int NH, int NKV,
                      cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const int hs = C / NH, heads = NH + 2 * NKV, warps_per_block = 8;
    const int grid = ceil_div(static_cast<size_t>(N) * heads, warps_per_block);
    if (hs % P == 0 && aligned16(dqkv) && aligned16(dout) && aligned16(qkv))
        qk_norm_backward_kernel<T, P>
            <<<grid, 32 * warps_per_block, 0, s>>>(dqkv, dout, qkv, rstd, N, hs, heads, NH + NKV);
    else
        qk_norm_backward_kernel<T, 1>
            <<<grid, 32 * warps_per_block, 0, s>>>(dqkv, dout, qkv, rstd, N, hs, heads, NH + NKV);
    SIXND_CUDA_LAUNCHED("qk_norm_backward");
}

template void qk_norm_forward<float>(float*, float*, const float*, int, int, int, int, cudaStream_t);
template void qk_norm_forward<bf16>(bf16*, float*, const bf16*, int, int, int, int, cudaStream_t);
template void qk_norm_backward<float>(float*, const float*, const float*, const float*, int, int, int, int,
                                      cudaStream_t);
template void qk_norm_backward<bf16>(bf16*, const bf16*, const bf16*, const float*, int, int, int, int, cudaStream_t);

}  // namespace sixnd::cuda
