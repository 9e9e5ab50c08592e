// layernorm_forward: out[N,C] = (x - mean) * rstd * weight + bias (bias may be null), eps 1e-5, with
// x = inp1 (plain) or x = residual = inp1 + inp2 (fused residual; x is the value as stored in
// T, so the backward, which reads the stored residual, sees the same x). One warp per row;
// each lane owns P-element packets (16 bytes when C and the pointers allow); three passes over
// the row (mean, variance, normalise) that hit L1 after the first.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T, int P>
__global__ void layernorm_forward_kernel(T* residual, T* out, float* mean, float* rstd, const T* inp1,
                                         const T* inp2, const T* weight, const T* bias, int N, int C) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    size_t off = static_cast<size_t>(row) * C;
    const T* x = inp1 + off;
    float sum = 0.0f;
    for (int c = lane * P; c < C; c += 32 * P) {
        float a[P];
        load_f32<P>(a, x + c);
        if (residual) {
            float b[P];
            load_f32<P>(b, inp2 + off + c);
#pragma unroll
            for (int k = 0; k < P; k++) a[k] = round_to<T>(a[k] + b[k]);
            store_f32<P>(residual + off + c, a);
        }
#pragma unroll
        for (int k = 0; k < P; k++) sum += a[k];
    }
    if (residual) x = residual + off;  // each lane re-reads only what it wrote itself
    float m = warp_sum(sum) / C;
    float var = 0.0f;
    for (int c = lane * P; c < C; c += 32 * P) {
        float a[P];
        load_f32<P>(a, x + c);
#pragma unroll
        for (int k = 0; k < P; k++) var += (a[k] - m) * (a[k] - m);
    }
    float s = warp_norm_rstd<P>(var, x, C, m, 1e-5f, lane);
    for (int c = lane * P; c < C; c += 32 * P) {
        float a[P], w[P], b[P] = {}, o[P];
        load_f32<P>(a, x + c);
        load_f32<P>(w, weight + c);
        if (bias) load_f32<P>(b, bias + c);
#pragma unroll
        for (int k = 0; k < P; k++) o[k] = (a[k] - m) * s * w[k] + b[k];
        store_f32<P>(out + off + c, o);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = s;
    }
}

}  // namespace

template <typename T>
void layernorm_forward(T* residual, T* out, float* mean, float* rstd, const T* inp1, const T* inp2,
                       const T* weight, const T* bias, int N, int C, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const int block = 256, rows_per_block = block / 32;
    bool packed = C % P == 0 && aligned16(out) && aligned16(inp1) && aligned16(weight) && aligned16(bias) &&
                  (!residual || (aligned16(residual) && aligned16(inp2)));
    if (packed)
        layernorm_forward_kernel<T, P><<<ceil_div(N, rows_per_block), block, 0, s>>>(residual, out, mean, rstd, inp1,
                                                                                    inp2, weight, bias, N, C);
    else
        layernorm_forward_kernel<T, 1><<<ceil_div(N, rows_per_block), block, 0, s>>>(residual, out, mean, rstd, inp1,
                                                                                    inp2, weight, bias, N, C);
    SIXND_CUDA_LAUNCHED("layernorm_forward");
}

template void layernorm_forward<float>(float*, float*, float*, float*, const float*, const float*, const float*,
                                       const float*, int, int, cudaStream_t);
template void layernorm_forward<bf16>(bf16*, bf16*, float*, float*, const bf16*, const bf16*, const bf16*,
                                      const bf16*, int, int, cudaStream_t);

}  // namespace sixnd::cuda
