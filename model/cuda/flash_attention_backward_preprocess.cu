// flash_attention_backward_preprocess: D[b,h,t] = sum_d dout[b,t,h*hs+d] * out[b,t,h*hs+d]
// (the rowsum(dO * O) term of the softmax gradient, so the main kernels never need O), and
// zeroes the FP32 dQ accumulator row [b,h,t,:] when the atomic path uses one.
// One warp per (b, t, h) row, 16-byte loads (hs = 64 or 128: 8 bf16 per lane or fewer lanes).
#include "model/cuda/flash_common.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__global__ void flash_attention_backward_preprocess_kernel(float* Dsum, float* dq_accum, const bf16* dout,
                                                           const bf16* out, int B, int T, int C, int NH) {
    const int hs = C / NH;
    size_t r = static_cast<size_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= static_cast<size_t>(B) * T * NH) return;
    int h = static_cast<int>(r % NH);
    size_t bt = r / NH;
    int t = static_cast<int>(bt % T), b = static_cast<int>(bt / T);
    size_t off = bt * C + static_cast<size_t>(h) * hs;
    float acc = 0.0f;
    for (int d = lane * 8; d < hs; d += 32 * 8) {
        Packed128<bf16> x = load128(dout + off + d), y = load128(out + off + d);
#pragma unroll
        for (int i = 0; i < 8; i++) acc += __bfloat162float(x[i]) * __bfloat162float(y[i]);
    }
    acc = warp_sum(acc);
    size_t row = (static_cast<size_t>(b) * NH + h) * T + t;
    if (lane == 0) Dsum[row] = acc;
    if (dq_accum)
        for (int d = lane; d < hs; d += 32) dq_accum[row * hs + d] = 0.0f;
}

}  // namespace

void flash_attention_backward_preprocess(float* D, float* dq_accum, const bf16* dout, const bf16* out, int B, int T,
                                         int C, int NH, cudaStream_t s) {
    size_t rows = static_cast<size_t>(B) * T * NH;
    flash_attention_backward_preprocess_kernel<<<ceil_div(rows, 8), 256, 0, s>>>(D, dq_accum, dout, out, B, T, C, NH);
    SIXND_CUDA_LAUNCHED("flash_attention_backward_preprocess");
}

}  // namespace sixnd::cuda
