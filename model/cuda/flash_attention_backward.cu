// flash_attention_backward: the FlashAttention-2 backward for bf16, head size 64 or 128.
//   1. preprocess: D = rowsum(dO * O) per (b, h, t) (and zero the FP32 dQ accumulator)
//   2. dkdv: per key tile of a kv head, recompute P from Q, K and the forward's lse, accumulate
//      dK and dV in FP32 registers over the query tiles on and below the diagonal of every query
//      head that shares it (grouped-query attention: one block owns the sum, so no atomics)
//   3. deterministic: a dQ kernel per query tile (recomputes S and dP; no atomics, fixed order)
//      otherwise:     dQ is added by step 2 with FP32 atomics and converted to bf16 here.
// The deterministic path does two more tile products per block pair (7 instead of 5) in
// exchange for bitwise-reproducible gradients.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {

void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                              int B, int T, int C, int NH, int NKV, bool deterministic, Scratch& scratch,
                              cudaStream_t s) {
    SIXND_CHECK(flash_attention_supported(qkv, C, NH, NKV), "flash_attention_backward",
                "needs head size 64 or 128, NH a multiple of NKV and a 16-byte aligned qkv (flash_attention_supported)");
    const size_t rows = static_cast<size_t>(B) * NH * T;
    const size_t dq_floats = deterministic ? 0 : rows * (C / NH);
    float* D = static_cast<float*>(scratch.get(sizeof(float) * (rows + dq_floats) + 16));
    // The accumulator starts 16-byte aligned (float4 loads in the convert kernel).
    float* dq_accum = deterministic ? nullptr : D + (rows + 3) / 4 * 4;
    flash_attention_backward_preprocess(D, dq_accum, dout, out, B, T, C, NH, s);
    flash_attention_backward_dkdv(dqkv, dq_accum, dout, qkv, lse, D, B, T, C, NH, NKV, s);
    if (deterministic) flash_attention_backward_dq(dqkv, dout, qkv, lse, D, B, T, C, NH, NKV, s);
    else flash_attention_dq_convert(dqkv, dq_accum, B, T, C, NH, NKV, s);
}

}  // namespace sixnd::cuda
