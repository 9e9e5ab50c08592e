// attention_softmax_forward: for each of the B*NH*T rows of scores[.., T] (row r is query
// t = r % T): probs[r, j] = exp(scale*s_j - max) / sum over j <= t, and 0 for j > t.
// lse_out, if given, gets log(sum) + max per row, and row_max, if given, the max (the largest
// scaled score over j <= t); with lse_in the first two passes are replaced by the saved value:
// probs = exp(scale*s_j - lse). One warp per row, FP32; probs may alias scores.
#include <cfloat>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T>
__global__ void attention_softmax_forward_kernel(float* probs, T* probs_t, float* lse_out, float* row_max,
                                                 const float* scores, const float* lse_in, int rows, int T_,
                                                 float scale) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    int t = row % T_;
    size_t off = static_cast<size_t>(row) * T_;
    float m, inv;
    if (lse_in) {
        m = lse_in[row];
        inv = 1.0f;
    } else {
        m = -FLT_MAX;
        for (int j = lane; j <= t; j += 32) m = fmaxf(m, scale * scores[off + j]);
        m = warp_max(m);
        float sum = 0.0f;
        for (int j = lane; j <= t; j += 32) sum += __expf(scale * scores[off + j] - m);
        sum = warp_sum(sum);
        inv = 1.0f / sum;
        if (lse_out && lane == 0) lse_out[row] = m + logf(sum);
        if (row_max && lane == 0) row_max[row] = m;
    }
    for (int j = lane; j < T_; j += 32) {
        float p = j <= t ? __expf(scale * scores[off + j] - m) * inv : 0.0f;
        probs[off + j] = p;
        if (probs_t) probs_t[off + j] = from_float<T>(p);
    }
}

}  // namespace

template <typename T>
void attention_softmax_forward(float* probs, T* probs_t, float* lse_out, float* row_max, const float* scores,
                               const float* lse_in, int rows, int T_, float scale, cudaStream_t s) {
    attention_softmax_forward_kernel<T>
        <<<ceil_div(rows, 8), 256, 0, s>>>(probs, probs_t, lse_out, row_max, scores, lse_in, rows, T_, scale);
    SIXND_CUDA_LAUNCHED("attention_softmax_forward");
}

template void attention_softmax_forward<float>(float*, float*, float*, float*, const float*, const float*, int, int,
                                               float, cudaStream_t);
template void attention_softmax_forward<bf16>(float*, bf16*, float*, float*, const float*, const float*, int, int,
                                              float, cudaStream_t);

}  // namespace sixnd::cuda
