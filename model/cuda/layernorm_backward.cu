// layernorm_backward, given dout[N,C], the forward's input x[N,C], weight[C], mean[N], rstd[N]:
//   n = (x - mean) * rstd;  g = weight * dout
//   dinp[N,C]  += (g - mean_c(g) - n * mean_c(g * n)) * rstd
//   dweight[C] += sum_n dout * n;   dbias[C] += sum_n dout
// dinp: one warp per row (two passes). dweight/dbias: column sums in a fixed order, so the
// result is bitwise deterministic: a grid of (32-column strip, row group) blocks writes FP32
// partials [G, C]; a second kernel adds the G partials in order and rounds into T once.
#include <algorithm>

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

constexpr int kRowsPerStep = 8;

// block (32, kRowsPerStep); grid (C/32 strips, G row groups)
template <typename T>
__global__ void layernorm_backward_partials(float* part_w, float* part_b, const T* dout, const T* inp,
                                            const float* mean, const float* rstd, int N, int C) {
    __shared__ float sw[kRowsPerStep][33], sb[kRowsPerStep][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float aw = 0.0f, ab = 0.0f;
    if (c < C) {
        for (int r = blockIdx.y * kRowsPerStep + threadIdx.y; r < N; r += gridDim.y * kRowsPerStep) {
            size_t i = static_cast<size_t>(r) * C + c;
            float d = to_float(dout[i]);
            aw += d * (to_float(inp[i]) - mean[r]) * rstd[r];
            ab += d;
        }
    }
    sw[threadIdx.y][threadIdx.x] = aw;
    sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        for (int y = 1; y < kRowsPerStep; y++) {
            aw += sw[y][threadIdx.x];
            ab += sb[y][threadIdx.x];
        }
        part_w[static_cast<size_t>(blockIdx.y) * C + c] = aw;
        part_b[static_cast<size_t>(blockIdx.y) * C + c] = ab;
    }
}

template <typename T>
__global__ void layernorm_backward_finish(T* dweight, T* dbias, const float* part_w, const float* part_b, int G,
                                          int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float aw = 0.0f, ab = 0.0f;
    for (int g = 0; g < G; g++) {
        aw += part_w[static_cast<size_t>(g) * C + c];
        ab += part_b[static_cast<size_t>(g) * C + c];
    }
    dweight[c] = from_float<T>(to_float(dweight[c]) + aw);
    dbias[c] = from_float<T>(to_float(dbias[c]) + ab);
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

    // G depends only on N, never on the device, so the summation order is fixed.
    const int G = std::min(ceil_div(N, 4 * kRowsPerStep), 256);
    float* part = static_cast<float*>(scratch.get(sizeof(float) * 2 * static_cast<size_t>(G) * C));
    layernorm_backward_partials<T><<<dim3(ceil_div(C, 32), G), dim3(32, kRowsPerStep), 0, s>>>(
        part, part + static_cast<size_t>(G) * C, dout, inp, mean, rstd, N, C);
    SIXND_CUDA_LAUNCHED("layernorm_backward_partials");
    layernorm_backward_finish<T><<<ceil_div(C, 256), 256, 0, s>>>(dweight, dbias, part, part + static_cast<size_t>(G) * C,
                                                                   G, C);
    SIXND_CUDA_LAUNCHED("layernorm_backward_finish");
}

template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                        const float*, const float*, int, int, Scratch&, cudaStream_t);
template void layernorm_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*, const float*,
                                       const float*, int, int, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
