// The op set: everything the GPT forward/backward and the optimizer need from a device.
// CpuOps (model/cpu) and CudaOps (model/cuda) implement it; the model, trainer and ZeRO
// engine only ever hold an Ops&.
//
// Conventions, as in llm.c:
//  - "X" buffers (activations, parameters, gradients) are stored in ops.dtype(): float for
//    fp32, bf16 for bf16. They are passed as void*. Statistics (layernorm mean/rstd, attention
//    log-sum-exp or probabilities, per-token losses), master weights and Adam moments are
//    always float. Every reduction accumulates in FP32 (or wider).
//  - N = B*T rows; C channels; OC output channels; NH heads; hs = C/NH head size.
//  - Weights are [OC, C] row-major (out, in), as in llm.c; a Linear is out = inp @ W^T + b.
//  - "+=" below means the op accumulates into its output (gradients accumulate over
//    micro-steps); "=" means it overwrites.
//  - Results must be deterministic: the same inputs and thread count give the same bits.
//  - Sizes are positive: no caller asks for an empty op. The CPU kernels happen to do nothing
//    for one; the CUDA launchers refuse it (a grid of zero blocks is a launch error).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "core/dtype.h"
#include "core/memory.h"
#include "core/op_clock.h"

namespace sixnd {

enum class AttentionKind { naive, flash };
AttentionKind parse_attention(const std::string& s);  // "naive" | "flash"
const char* attention_name(AttentionKind k);

struct AdamWArgs {
    float lr = 1e-3f;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.0f;  // decoupled: p -= lr * wd * p; the caller passes 0 for 1-D tensors
    int step = 1;               // 1-based, for bias correction
    float grad_scale = 1.0f;    // multiplies every gradient first (clipping, averaging)
};

// The per-step constants both backends' AdamW kernels use, folded once per call (in double) so
// that the element loop has one division and one square root where the textbook form has three
// divisions: p' = p * decay - step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps), which is
// p - lr * (m/bc1 / (sqrt(v/bc2) + eps) + wd * p) rearranged, as PyTorch's AdamW computes it.
// On an AVX2 core the divisions had made the update compute-bound, and the BF16 update (with
// its conversions) half as slow again as FP32's.
struct AdamWStep {
    float beta1, beta2, eps, grad_scale;
    float step_size;     // lr / (1 - beta1^step)
    float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^step)
    float decay;         // 1 - lr * weight_decay
};
AdamWStep adamw_step(const AdamWArgs& a);

// A parameter stored as dtype is finite exactly when the float it is rounded from has
// |p| < stored_overflow(dtype) (false for NaN): float overflows only at infinity; bf16 rounds
// to nearest even, so from 0x1.FFp127 (the tie between its largest finite value and
// infinity) a float rounds to infinity.
inline float stored_overflow(DType d) { return d == DType::f32 ? std::numeric_limits<float>::infinity() : 0x1.FFp127f; }

class Ops {
public:
    virtual ~Ops() = default;
    virtual const char* name() const = 0;
    virtual DType dtype() const = 0;
    virtual MemoryBackend& memory() = 0;
    // The clock the per-op profile times this backend's ops with (core/op_clock.h).
    virtual std::unique_ptr<OpClock> make_op_clock() { return make_host_clock(memory()); }

    // out[B,T,C] = wte[inp[b,t],:] + wpe[t,:]; wpe may be null (--pos rope): out = wte[inp[b,t],:]
    virtual void encoder_forward(void* out, const int32_t* inp, const void* wte, const void* wpe, int B, int T,
                                 int C) = 0;
    // dwte[inp[b,t],:] += dout[b,t,:];  dwpe[t,:] += sum_b dout[b,t,:]   (deterministic order; dwpe null
    // when wpe is)
    virtual void encoder_backward(void* dwte, void* dwpe, const void* dout, const int32_t* inp, int B, int T,
                                  int C) = 0;

    // out[N,C] = (inp - mean) * rstd * weight + bias, eps 1e-5; mean[N], rstd[N] = saved stats.
    // bias may be null (--bias off): no bias is added, and layernorm_backward's dbias is null.
    virtual void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                   const void* bias, int N, int C) = 0;
    // residual[N,C] = inp1 + inp2, then out = layernorm(residual) as above
    virtual void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* inp1,
                                            const void* inp2, const void* weight, const void* bias, int N,
                                            int C) = 0;
    // dinp[N,C] += dL/dinp;  dweight[C] += ...;  dbias[C] += ...
    virtual void layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                    const void* weight, const float* mean, const float* rstd, int N, int C) = 0;

    // out[N,OC] = inp[N,C] @ weight[OC,C]^T + bias[OC]   (bias may be null)
    // If pre_gelu is non-null the GELU epilogue is applied: pre_gelu = inp @ W^T + b, out = gelu(pre_gelu).
    // out is GELU of pre_gelu as stored, except in cuBLASLt's fused epilogue, which applies it to
    // the FP32 sum before rounding (in bf16, out may differ by an ulp from the unfused path).
    virtual void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias,
                                int N, int C, int OC) = 0;
    // dinp[N,C] = dout[N,OC] @ weight[OC,C]    (skipped when dinp is null)
    // dweight[OC,C] += dout^T @ inp;  dbias[OC] += sum_n dout[n,:]   (dbias may be null)
    virtual void matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                 const void* weight, int N, int C, int OC) = 0;

    // out[n] = gelu_tanh(inp[n])
    virtual void gelu_forward(void* out, const void* inp, size_t n) = 0;
    // dinp[n] = gelu_tanh'(inp[n]) * dout[n]   (dinp may alias dout)
    virtual void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) = 0;
    // out[n] = a[n] + b[n]
    virtual void residual_forward(void* out, const void* a, const void* b, size_t n) = 0;

    // Causal multi-head self-attention with NKV key/value heads shared by NH query heads
    // (grouped-query attention; NKV == NH is multi-head, NKV == 1 multi-query; NH % NKV == 0).
    // hs = C/NH. qkv[B,T,C + 2*NKV*hs]: q = [..., 0:C] (NH heads), k = [..., C:C+NKV*hs],
    // v = [..., C+NKV*hs:C+2*NKV*hs]; query head h reads kv head h / (NH/NKV).
    // out[B,T,C] = softmax(q k^T / sqrt(hs), causal) v, heads concatenated.
    // stats: naive -> probabilities [B,NH,T,T] float; flash -> log-sum-exp [B,NH,T] float
    // (the size is attention_stats_floats). Flash never materialises T x T.
    // row_max, when non-null, [B,NH,T] float: each query row's largest pre-softmax logit
    // q.k/sqrt(hs) over the keys it sees (the attention-logit-growth diagnostic).
    static size_t attention_stats_floats(AttentionKind kind, int B, int T, int NH) {
        return kind == AttentionKind::naive ? static_cast<size_t>(B) * NH * T * T : static_cast<size_t>(B) * NH * T;
    }
    static size_t qkv_width(int C, int NH, int NKV) { return static_cast<size_t>(C) + 2 * static_cast<size_t>(NKV) * (C / NH); }
    virtual void attention_forward(AttentionKind kind, void* out, float* stats, float* row_max, const void* qkv,
                                   int B, int T, int C, int NH, int NKV) = 0;
    // dqkv[B,T,qkv_width] = dL/dqkv (overwritten) given dout[B,T,C] and the forward's qkv, out and stats.
    virtual void attention_backward(AttentionKind kind, void* dqkv, const void* dout, const void* qkv,
                                    const void* out, const float* stats, int B, int T, int C, int NH, int NKV) = 0;

    // One decoding step with a KV cache. qkv[B, S, qkv_width] holds the q, k, v rows of positions
    // 0..t of each sequence (S is the cache length, t < S); out[B, C] = causal attention of the
    // query at row t over the keys and values of rows 0..t. Only decoding uses it, so it has
    // no backward.
    virtual void attention_decode(void* out, const void* qkv, int B, int S, int t, int C, int NH, int NKV) = 0;

    // --- the architecture knobs (GPT-2 uses none of them) ---
    // RMSNorm: out[N,C] = inp * rstd * weight, rstd[N] = 1/sqrt(mean(inp^2) + 1e-5); weight may
    // be null (scale 1).
    virtual void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C) = 0;
    // dinp[N,C] += dL/dinp;  dweight[C] += ... (dweight null when weight is null)
    virtual void rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                                  const float* rstd, int N, int C) = 0;
    // QK-norm: out = qkv with every q head and k head vector (hs values) RMS-normalised, no
    // weight, eps 1e-5 (v copied). qkv as for attention; rstd[N, NH+NKV] saved. out may not alias.
    virtual void qk_norm_forward(void* out, float* rstd, const void* qkv, int N, int C, int NH, int NKV) = 0;
    // dqkv[N,qkv_width] = dL/dqkv (overwritten) given dout (the gradient at the normalised qkv).
    virtual void qk_norm_backward(void* dqkv, const void* dout, const void* qkv, const float* rstd, int N, int C,
                                  int NH, int NKV) = 0;
    // Rotary position embedding on the q and k heads of qkv[B,T,qkv_width], in place; v untouched.
    // Pairs are (i, i + hs/2) ("rotate half"); position t, pair i turns by t * theta^(-2i/hs).
    // Row t of each sequence is at position pos0 + t (a decoder's one new row: T = 1, pos0 = its place).
    virtual void rope_forward(void* qkv, int B, int T, int C, int NH, int NKV, float theta, int pos0) = 0;
    // The inverse rotation of the q and k parts of dqkv, in place (the gradient of rope_forward).
    virtual void rope_backward(void* dqkv, int B, int T, int C, int NH, int NKV, float theta) = 0;
    // SwiGLU: inp[N,2H] = [gate | up]; out[N,H] = silu(gate) * up.
    virtual void swiglu_forward(void* out, const void* inp, int N, int H) = 0;
    // dinp[N,2H] = dL/dinp (overwritten) given dout[N,H].
    virtual void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int H) = 0;
    // ReLU^2: out[n] = max(inp[n], 0)^2;  backward dinp[n] = 2 max(inp[n], 0) dout[n] (dinp may alias dout).
    virtual void relu2_forward(void* out, const void* inp, size_t n) = 0;
    virtual void relu2_backward(void* dinp, const void* inp, const void* dout, size_t n) = 0;

    // Fused classifier over logits[N,Vp] where only the first V columns are real vocabulary:
    // losses[n] = -log softmax(logits[n,0:V])[targets[n]]  (probabilities never materialised);
    // if write_dlogits, logits is overwritten with dloss * (softmax - onehot) on 0:V and 0 on V:Vp.
    // targets[N] are in [0, V); losses may be null when only dlogits are wanted.
    virtual void classifier_forward_backward(void* logits, float* losses, const int32_t* targets, int N, int V,
                                             int Vp, float dloss, bool write_dlogits) = 0;

    // AdamW on n elements (one tensor, or a shard of one). grads are X. m, v float.
    // master non-null: master is updated and params = round(master).
    // master null: params themselves are updated (in bf16 storage small updates vanish; that is
    // the --master-weights off ablation).
    virtual void adamw(void* params, float* master, const void* grads, float* m, float* v, size_t n,
                       const AdamWArgs& a) = 0;
    // Whether adamw or muon_apply has stored a parameter that is not finite since the last call
    // (in bf16 storage, a finite master weight that rounds to infinity counts); the call clears
    // it. Checked while the update writes (the value is in a register there), so the trainer's
    // test that a step left the parameters finite costs no pass over them.
    virtual bool take_nonfinite_update() = 0;
    // sum of x[i]^2 as double, accumulated in a fixed order (deterministic).
    virtual double sum_squares(const void* x, size_t n) = 0;
    // dst[n] = src[n] converted between float and bf16 (RNE); same type is a copy.
    virtual void cast(void* dst, DType dst_type, const void* src, DType src_type, size_t n) = 0;

    // The Muon optimizer (train/muon.h): momentum, orthogonalisation, update. All FP32 math.
    // Nesterov momentum on n elements: g = grad_scale * grads;  m = beta m + (1 - beta) g;
    // out = (1 - beta) g + beta m  (the direction Newton-Schulz orthogonalises).
    virtual void muon_momentum(float* out, float* m, const void* grads, size_t n, float beta, float grad_scale) = 0;
    // x[rows, cols] (FP32, row-major) = the quintic Newton-Schulz approximation of its orthogonal
    // polar factor, in place: X = x / (||x||_F + 1e-7), then `steps` times A = X X^T,
    // X = a X + (b A + c A A) X with (a, b, c) = (3.4445, -4.7750, 2.0315), iterating on x^T
    // when rows > cols (so A is min(rows, cols) square). work: newton_schulz_floats() floats.
    static size_t newton_schulz_floats(int rows, int cols) {
        const size_t s = static_cast<size_t>(rows < cols ? rows : cols), l = static_cast<size_t>(rows < cols ? cols : rows);
        return 2 * s * s + s * l;
    }
    virtual void newton_schulz(float* x, float* work, int rows, int cols, int steps) = 0;
    // p = p (1 - lr weight_decay) - lr scale update on n elements; master / params as in adamw.
    virtual void muon_apply(void* params, float* master, const float* update, size_t n, float lr, float scale,
                            float weight_decay) = 0;
};

}  // namespace sixnd
