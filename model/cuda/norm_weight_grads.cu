// norm_weight_grads: the parameter gradients of a row normalisation (LayerNorm, RMSNorm) over
// dout[N,C] and its input x[N,C]:
//   dweight[C] += sum_n dout[n,c] * (x[n,c] - mean[n]) * rstd[n]   (mean null: RMSNorm, no centring)
//   dbias[C]   += sum_n dout[n,c]                                  (skipped when dbias is null)
// Column sums in a fixed order, so the result is bitwise deterministic: a grid of (32-column
// strip, row group) blocks of 32 x kRowsPerStep threads writes FP32 partials [G, C]; a second
// kernel adds the G partials in order and rounds into T once. G depends only on N, never on
// the device.
#include <algorithm>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

constexpr int kRowsPerStep = 8;

template <typename T>
__global__ void norm_weight_partials(float* part_w, float* part_b, const T* dout, const T* inp, const float* mean,
                                     const float* rstd, int N, int C) {
    __shared__ float sw[kRowsPerStep][33], sb[kRowsPerStep][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float aw = 0.0f, ab = 0.0f;
    if (c < C) {
        for (int r = blockIdx.y * kRowsPerStep + threadIdx.y; r < N; r += gridDim.y * kRowsPerStep) {
            size_t i = static_cast<size_t>(r) * C + c;
            float d = to_float(dout[i]);
            aw += d * (to_float(inp[i]) - (mean ? mean[r] : 0.0f)) * rstd[r];
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
        if (part_b) part_b[static_cast<size_t>(blockIdx.y) * C + c] = ab;
    }
}

template <typename T>
__global__ void norm_weight_finish(T* dweight, T* dbias, const float* part_w, const float* part_b, int G, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float aw = 0.0f, ab = 0.0f;
    for (int g = 0; g < G; g++) {
        aw += part_w[static_cast<size_t>(g) * C + c];
        if (part_b) ab += part_b[static_cast<size_t>(g) * C + c];
    }
    dweight[c] = from_float<T>(to_float(dweight[c]) + aw);
    if (dbias) dbias[c] = from_float<T>(to_float(dbias[c]) + ab);
}

}  // namespace

template <typename T>
void norm_weight_grads(T* dweight, T* dbias, const T* dout, const T* inp, const float* mean, const float* rstd, int N,
                       int C, Scratch& scratch, cudaStream_t s) {
    const int G = std::min(ceil_div(N, 4 * kRowsPerStep), 256);
    const size_t GC = static_cast<size_t>(G) * C;
    float* part_w = static_cast<float*>(scratch.get(sizeof(float) * (dbias ? 2 : 1) * GC));
    float* part_b = dbias ? part_w + GC : nullptr;
    norm_weight_partials<T><<<dim3(ceil_div(C, 32), G), dim3(32, kRowsPerStep), 0, s>>>(part_w, part_b, dout, inp,
                                                                                       mean, rstd, N, C);
    SIXND_CUDA_LAUNCHED("norm_weight_grads partials");
    norm_weight_finish<T><<<ceil_div(C, 256), 256, 0, s>>>(dweight, dbias, part_w, part_b, G, C);
    SIXND_CUDA_LAUNCHED("norm_weight_grads finish");
}

template void norm_weight_grads<float>(float*, float*, const float*, const float*, const float*, const float*, int,
                                       int, Scratch&, cudaStream_t);
template void norm_weight_grads<bf16>(bf16*, bf16*, const bf16*, const bf16*, const float*, const float*, int, int,
                                      Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
