// The CPU kernels behind CpuOps, one file each, templated on the storage type X (float or
// bf16; "X buffers" in model/ops.h). Shapes and semantics are those of the matching Ops
// member; math and accumulation are FP32 whatever X is, and every "+=" output is read,
// accumulated in FP32 and rounded to X once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/bf16.h"
#include "core/dtype.h"
#include "model/cpu/matmul.h"
#include "model/ops.h"

namespace sixnd::cpu {

// An OpenMP region costs a fork and a join — microseconds on an idle machine, milliseconds
// when other processes hold the cores (CI runs tests side by side) — so an op with less work
// than this runs on the calling thread. Every kernel gives the same bits either way.
constexpr size_t kMinParallelWork = size_t(1) << 16;
inline bool worth_threads(size_t work) { return work >= kMinParallelWork; }

template <typename X>
void encoder_forward(X* out, const int32_t* inp, const X* wte, const X* wpe, int B, int T, int C);
template <typename X>
void encoder_backward(X* dwte, X* dwpe, const X* dout, const int32_t* inp, int B, int T, int C);

template <typename X>
void layernorm_forward(X* out, float* mean, float* rstd, const X* inp, const X* weight, const X* bias, int N, int C);
template <typename X>
void residual_layernorm_forward(X* residual, X* out, float* mean, float* rstd, const X* inp1, const X* inp2,
                                const X* weight, const X* bias, int N, int C);
template <typename X>
void layernorm_backward(X* dinp, X* dweight, X* dbias, const X* dout, const X* inp, const X* weight, const float* mean,
                        const float* rstd, int N, int C);

template <typename X>
void matmul_forward(Matmul& mm, X* out, X* pre_gelu, const X* inp, const X* weight, const X* bias, int N, int C,
                    int OC);
template <typename X>
void matmul_backward(Matmul& mm, X* dinp, X* dweight, X* dbias, const X* dout, const X* inp, const X* weight, int N,
                     int C, int OC);

template <typename X>
void gelu_forward(X* out, const X* inp, size_t n);
template <typename X>
void gelu_backward(X* dinp, const X* inp, const X* dout, size_t n);
template <typename X>
void residual_forward(X* out, const X* a, const X* b, size_t n);

template <typename X>
void attention_naive_forward(X* out, float* probs, float* row_max, const X* qkv, int B, int T, int C, int NH, int NKV);
template <typename X>
void attention_naive_backward(X* dqkv, const X* dout, const X* qkv, const float* probs, int B, int T, int C, int NH,
                              int NKV);
template <typename X>
void attention_flash_forward(X* out, float* lse, float* row_max, const X* qkv, int B, int T, int C, int NH, int NKV);
template <typename X>
void attention_flash_backward(X* dqkv, const X* dout, const X* qkv, const X* out, const float* lse, int B, int T, int C,
                              int NH, int NKV);
// Whether the flash kernels in bf16 storage compute heads of size hs on BF16 dot products (P and dS
// rounded to bf16) rather than FP32 FMAs: on AVX512-BF16 where BF16 matmuls run on dot products
// without AMX, for hs a multiple of 16.
bool flash_on_bf16_dots(int hs);

template <typename X>
void attention_decode(X* out, const X* qkv, int B, int S, int t, int C, int NH, int NKV);

template <typename X>
void rmsnorm_forward(X* out, float* rstd, const X* inp, const X* weight, int N, int C);
template <typename X>
void rmsnorm_backward(X* dinp, X* dweight, const X* dout, const X* inp, const X* weight, const float* rstd, int N,
                      int C);
template <typename X>
void qk_norm_forward(X* out, float* rstd, const X* qkv, int N, int C, int NH, int NKV);
template <typename X>
void qk_norm_backward(X* dqkv, const X* dout, const X* qkv, const float* rstd, int N, int C, int NH, int NKV);
template <typename X>
void rope_forward(X* qkv, int B, int T, int C, int NH, int NKV, float theta, int pos0);
template <typename X>
void rope_backward(X* dqkv, int B, int T, int C, int NH, int NKV, float theta);
template <typename X>
void swiglu_forward(X* out, const X* inp, int N, int H);
template <typename X>
void swiglu_backward(X* dinp, const X* inp, const X* dout, int N, int H);
template <typename X>
void relu2_forward(X* out, const X* inp, size_t n);
template <typename X>
void relu2_backward(X* dinp, const X* inp, const X* dout, size_t n);

template <typename X>
void classifier_forward_backward(X* logits, float* losses, const int32_t* targets, int N, int V, int Vp, float dloss,
                                 bool write_dlogits);

// adamw and muon_apply return how many of the parameters they stored are not finite (see
// stored_overflow, model/ops.h).
template <typename X>
size_t adamw(X* params, float* master, const X* grads, float* m, float* v, size_t n, const AdamWArgs& a);

template <typename X>
double sum_squares(const X* x, size_t n);
template <typename D, typename S>
void cast(D* dst, const S* src, size_t n);

// Muon (muon.cpp); newton_schulz multiplies through mm, an FP32 Matmul.
template <typename X>
void muon_momentum(float* out, float* m, const X* grads, size_t n, float beta, float grad_scale);
void newton_schulz(Matmul& mm, float* x, float* work, int rows, int cols, int steps);
template <typename X>
size_t muon_apply(X* params, float* master, const float* update, size_t n, float lr, float scale, float weight_decay);

}  // namespace sixnd::cpu
