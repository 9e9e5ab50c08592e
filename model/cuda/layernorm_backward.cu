// layernorm_backward, given dout[N,C], the forward's input x[N,C], weight[C], mean[N], rstd[N]:
//   n = (x - mean) * rstd;  g = weight * dout
//   dinp[N,C]  += (g - mean_c(g) - n * mean_c(g * n)) * rstd
//   dweight[C] += sum_n dout * n;   dbias[C] += sum_n dout   (dbias null: no bias, skipped)
// dinp: one warp per row (two passes). dweight/dbias: deterministic column sums
// (norm_weight_grads.cu).
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T, int P>
__global__ void layernorm_backward_dinp(T* dinp, const T* dout, const T* inp, const T* weight, const float* mean,
                                        const float* rstd, int N, int C) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    size_t off = static_cast<size_t>(row) * C;
    float m = mean[row], s = rstd[row];
    float gsum = 0.0f, gnsum = 0.0f;
    for (int c = lane * P; c < C; c += 32 * P) {
        float x[P], d[P], w[P];
        load_f32<P>(x, inp + off + c);
        load_f32<P>(d, dout + off + c);
        load_f32<P>(w, weight + c);
#pragma unroll
        for (int k = 0; k < P; k++) {
            float g = w[k] * d[k];
            gsum += g;
            gnsum += g * (x[k] - m) * s;
        }
    }
    float gmean = warp_sum(gsum) / C, gnmean = warp_sum(gnsum) / C;
    for (int c = lane * P; c < C; c += 32 * P) {
        float x[P], d[P], w[P], o[P];
        load_f32<P>(x, inp + off + c);
        load_f32<P>(d, dout + off + c);
        load_f32<P>(w, weight + c);
        load_f32<P>(o, dinp + off + c);
#pragma unroll
        for (int k = 0; k < P; k++) o[k] += (w[k] * d[k] - gmean - (x[k] - m) * s * gnmean) * s;
        store_f32<P>(dinp + off + c, o);
    }
}

}  // namespace

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const float* mean, const float* rstd, int N, int C, Scratch& scratch, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    const int block = 256, rows_per_block = block / 32;
    bool packed = C % P == 0 && aligned16(dinp) && aligned16(dout) && aligned16(inp) && aligned16(weight);
    if (packed)
        layernorm_backward_dinp<T, P><<<ceil_div(N, rows_per_block), block, 0, s>>>(dinp, dout, inp, weight, mean,
                                                                                   rstd, N, C);
    else
        layernorm_backward_dinp<T, 1><<<ceil_div(N, rows_per_block), block, 0, s>>>(dinp, dout, inp, weight, mean,
                                                                                   rstd, N, C);
    SIXND_CUDA_LAUNCHED("layernorm_backward_dinp");

    norm_weight_grads<T>(dweight, dbias, dout, inp, mean, rstd, N, C, scratch, s);
}

template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                        const float*, const float*, int, int, Scratch&, cudaStream_t);
template void layernorm_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*,
                                       const float*, int, int, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
