// attention_softmax_backward: for each row r (query t = r % T) of probs and dprobs [.., T]:
//   dscores[r, j] = scale * p_j * (dp_j - sum_k p_k dp_k) for j <= t, 0 above the diagonal.
// One warp per row, FP32 math, output in T for the next GEMMs.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T>
__global__ void attention_softmax_backward_kernel(T* dscores, const float* probs, const float* dprobs, int rows,
                                                  int T_, float scale) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    int t = row % T_;
    size_t off = static_cast<size_t>(row) * T_;
    float dot = 0.0f;
    for (int j = lane; j <= t; j += 32) dot += probs[off + j] * dprobs[off + j];
    dot = warp_sum(dot);
    for (int j = lane; j < T_; j += 32)
        dscores[off + j] = from_float<T>(j <= t ? scale * probs[off + j] * (dprobs[off + j] - dot) : 0.0f);
}

}  // namespace

template <typename T>
void attention_softmax_backward(T* dscores, const float* probs, const float* dprobs, int rows, int T_, float scale,
                                cudaStream_t s) {
    attention_softmax_backward_kernel<T><<<ceil_div(rows, 8), 256, 0, s>>>(dscores, probs, dprobs, rows, T_, scale);
    SIXND_CUDA_LAUNCHED("attention_softmax_backward");
}

template void attention_softmax_backward<float>(float*, const float*, const float*, int, int, float, cudaStream_t);
template void attention_softmax_backward<bf16>(bf16*, const float*, const float*, int, int, float, cudaStream_t);

}  // namespace sixnd::cuda
