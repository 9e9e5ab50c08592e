// The CUDA kernels behind CudaOps, one file each (named for the kernel), templated on the
// storage type T (float or bf16). Shapes and semantics are those of the matching Ops member in
// model/ops.h; every launcher runs on `stream` and checks its launch.
#pragma once
#include <map>
#include <tuple>

#include "core/memory.h"
#include "model/cuda/cuda_common.cuh"
#include "model/ops.h"

namespace sixnd::cuda {

// Device scratch that grows on demand and is reused by every op (they run in stream order).
// Growing frees the old buffer first (cudaFree waits for the kernels that may still read it),
// so the device never holds both: near the memory limit the new one still fits, and the
// ledger's workspace peak is the largest scratch, not the sum of the last two.
class Scratch {
public:
    explicit Scratch(MemoryBackend& mem) : mem_(mem) {}
    void* get(size_t bytes) {
        if (bytes > buf_.bytes()) {
            buf_.reset();
            buf_ = DeviceBuffer(&mem_, bytes + bytes / 4, MemCategory::workspace);
        }
        return buf_.get();
    }

private:
    MemoryBackend& mem_;
    DeviceBuffer buf_;
};

// Cuts one scratch allocation into 256-byte aligned pieces: first sized with add(), then taken
// in the same order with take().
class Carve {
public:
    template <typename U> void add(size_t n) { bytes_ += round(n * sizeof(U)); }
    size_t bytes() const { return bytes_; }
    void start(void* base) { p_ = static_cast<char*>(base); }
    template <typename U> U* take(size_t n) {
        U* r = reinterpret_cast<U*>(p_);
        p_ += round(n * sizeof(U));
        return r;
    }

private:
    static size_t round(size_t b) { return (b + 255) / 256 * 256; }
    size_t bytes_ = 0;
    char* p_ = nullptr;
};

// cuBLASLt GEMMs in row-major terms: C[M,N] = alpha * op(A) @ op(B) + beta * C, where op(A) is
// [M,K] (A stored [K,M] when trans_a) and op(B) is [K,N] (B stored [N,K] when trans_b);
// batched with element strides. The heuristic's algorithm is chosen once per shape, types,
// epilogue and pointer alignment and cached.
struct GemmArgs {
    int M = 0, N = 0, K = 0;
    bool trans_a = false, trans_b = false;
    const void* A = nullptr;
    int lda = 0;
    long long stride_a = 0;
    const void* B = nullptr;
    int ldb = 0;
    long long stride_b = 0;
    void* C = nullptr;
    int ldc = 0;
    long long stride_c = 0;
    int batch = 1;
    float alpha = 1.0f, beta = 0.0f;
    cudaDataType_t ab_type = CUDA_R_32F, c_type = CUDA_R_32F;
    const void* bias = nullptr;  // [N], added to every row of C
    void* gelu_aux = nullptr;    // non-null: C = gelu(A@B + bias) and gelu_aux = A@B + bias ([M,N], ld N)
};

// A dense row-major C[M,N] (+)= op(A) op(B): the leading dimensions follow from the shapes.
inline GemmArgs dense_gemm(int M, int N, int K, bool ta, bool tb, const void* A, const void* B, void* C,
                           cudaDataType_t ab_type, cudaDataType_t c_type) {
    GemmArgs g;
    g.M = M;
    g.N = N;
    g.K = K;
    g.trans_a = ta;
    g.trans_b = tb;
    g.A = A;
    g.lda = ta ? M : K;
    g.B = B;
    g.ldb = tb ? K : N;
    g.C = C;
    g.ldc = N;
    g.ab_type = ab_type;
    g.c_type = c_type;
    return g;
}

class Matmul {
public:
    Matmul(MemoryBackend& mem, cudaStream_t stream);
    ~Matmul();
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;
    // False when the GELU epilogue cannot run for this call (gemm_fallback.h: any fault on that
    // path, e.g. an aux leading dimension not a multiple of 8); the caller then takes the unfused
    // path. A GEMM without the GELU epilogue that cannot run throws Error.
    bool gemm(const GemmArgs& g);

private:
    struct Plan;
    void build_plan(Plan& plan, const GemmArgs& g, int al_a, int al_b, int al_c);
    cublasLtHandle_t handle_ = nullptr;
    cudaStream_t stream_;
    DeviceBuffer workspace_;
    std::map<std::string, Plan*> plans_;
};

template <typename T>
void encoder_forward(T* out, const int32_t* inp, const T* wte, const T* wpe, int B, int T_, int C, cudaStream_t s);
template <typename T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int32_t* inp, int B, int T_, int C, Scratch& scratch,
                      cudaStream_t s);

// bias may be null (no bias); layernorm_backward's dbias is then null too.
template <typename T>
void layernorm_forward(T* residual, T* out, float* mean, float* rstd, const T* inp1, const T* inp2,
                       const T* weight, const T* bias, int N, int C, cudaStream_t s);
template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const float* mean, const float* rstd, int N, int C, Scratch& scratch, cudaStream_t s);
// dweight[C] += sum_n dout * (x - mean) * rstd (mean null: x * rstd); dbias[C] += sum_n dout
// (dbias may be null). Fixed-order partial sums: deterministic. Shared by both norms' backward.
template <typename T>
void norm_weight_grads(T* dweight, T* dbias, const T* dout, const T* inp, const float* mean, const float* rstd, int N,
                       int C, Scratch& scratch, cudaStream_t s);

// The architecture knobs (model/ops.h): RMSNorm, QK-norm, RoPE, SwiGLU, ReLU^2.
template <typename T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int N, int C, cudaStream_t s);
template <typename T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, const float* rstd, int N,
                      int C, Scratch& scratch, cudaStream_t s);
template <typename T>
void qk_norm_forward(T* out, float* rstd, const T* qkv, int N, int C, int NH, int NKV, cudaStream_t s);
template <typename T>
void qk_norm_backward(T* dqkv, const T* dout, const T* qkv, const float* rstd, int N, int C, int NH, int NKV,
                      cudaStream_t s);
template <typename T>
void rope_forward(T* qkv, int B, int T_, int C, int NH, int NKV, float theta, int pos0, Scratch& scratch,
                  cudaStream_t s);
template <typename T>
void rope_backward(T* dqkv, int B, int T_, int C, int NH, int NKV, float theta, Scratch& scratch, cudaStream_t s);
template <typename T> void swiglu_forward(T* out, const T* inp, int N, int H, cudaStream_t s);
template <typename T> void swiglu_backward(T* dinp, const T* inp, const T* dout, int N, int H, cudaStream_t s);
template <typename T> void relu2_forward(T* out, const T* inp, size_t n, cudaStream_t s);
template <typename T> void relu2_backward(T* dinp, const T* inp, const T* dout, size_t n, cudaStream_t s);

// dbias[OC] += sum_n dout[n, :]  (fixed-order partial sums: deterministic)
template <typename T>
void matmul_backward_bias(T* dbias, const T* dout, int N, int OC, Scratch& scratch, cudaStream_t s);

template <typename T> void gelu_forward(T* out, const T* inp, size_t n, cudaStream_t s);
template <typename T> void gelu_backward(T* dinp, const T* inp, const T* dout, size_t n, cudaStream_t s);
template <typename T> void residual_forward(T* out, const T* a, const T* b, size_t n, cudaStream_t s);

template <typename T>
void classifier_forward_backward(T* logits, float* losses, const int32_t* targets, int N, int V, int Vp,
                                 float dloss, bool write_dlogits, cudaStream_t s);

// adamw and muon_apply set *nonfinite (device-visible memory) where they store a parameter that
// is not finite (stored_overflow, model/ops.h), and leave it as it is elsewhere.
template <typename T>
void adamw(T* params, float* master, const T* grads, float* m, float* v, size_t n, const AdamWStep& p,
           unsigned* nonfinite, cudaStream_t s);

// sum of x^2 in double, fixed grid and order: deterministic on any device.
template <typename T> double sum_squares(const T* x, size_t n, Scratch& scratch, cudaStream_t s);

template <typename Dst, typename Src> void cast(Dst* dst, const Src* src, size_t n, cudaStream_t s);

// Muon (muon.cu); newton_schulz multiplies through mm in FP32.
template <typename T>
void muon_momentum(float* out, float* m, const T* grads, size_t n, float beta, float grad_scale, cudaStream_t s);
void newton_schulz(Matmul& mm, float* x, float* work, int rows, int cols, int steps, Scratch& scratch, cudaStream_t s);
template <typename T>
void muon_apply(T* params, float* master, const float* update, size_t n, float lr, float scale, float weight_decay,
                unsigned* nonfinite, cudaStream_t s);

// Attention with NKV key/value heads shared by NH query heads (grouped-query; model/ops.h):
// qkv rows are [q NH*hs | k NKV*hs | v NKV*hs], query head h reads kv head h / (NH/NKV).
//
// Naive attention: permute qkv to head-major q[B,NH,T,hs], k, v[B,NKV,T,hs], cuBLASLt batched
// GEMMs, a causal softmax kernel. The probabilities go to probs [B,NH,T,T] (--attention naive);
// with probs null they live in scratch and only the log-sum-exp is kept in lse [B,NH,T]
// (--attention flash where the flash kernel does not apply: fp32 storage or another head
// size), and backward recomputes them. row_max [B,NH,T] (may be null): each row's largest
// scaled logit.
template <typename T>
void attention_naive_forward(Matmul& mm, T* out, float* probs, float* lse, float* row_max, const T* qkv, int B,
                             int T_, int C, int NH, int NKV, Scratch& scratch, cudaStream_t s);
template <typename T>
void attention_naive_backward(Matmul& mm, T* dqkv, const T* dout, const T* qkv, const float* probs,
                              const float* lse, int B, int T_, int C, int NH, int NKV, Scratch& scratch,
                              cudaStream_t s);
// The pieces of the naive path, one file each.
// Between the row layout rows[B,T,(nq + 2 nkv) hs] (qkv: nq = NH, nkv = NKV; out: nkv = 0) and
// head-major buffers one after another: q[B,nq,T,hs], then k[B,nkv,T,hs] and v[B,nkv,T,hs].
template <typename T>
void attention_permute(T* heads, T* rows, int B, int T_, int hs, int nq, int nkv, bool to_heads, cudaStream_t s);
// probs[r, 0:T] = causal softmax(scale * scores[r, :]) over rows r of B*NH*T (row r is query
// r % T); probs may alias scores; probs_t (a copy in T for the next GEMM) may be null.
// lse_out and row_max (each may be null) receive each row's log-sum-exp and largest scaled
// score; given lse_in, the row's normaliser is taken from it instead (recomputing the forward's
// probabilities; row_max is then not written).
template <typename T>
void attention_softmax_forward(float* probs, T* probs_t, float* lse_out, float* row_max, const float* scores,
                               const float* lse_in, int rows, int T_, float scale, cudaStream_t s);
// dscores = scale * probs * (dprobs - rowsum(probs * dprobs)), zero above the diagonal.
template <typename T>
void attention_softmax_backward(T* dscores, const float* probs, const float* dprobs, int rows, int T_, float scale,
                                cudaStream_t s);

// One decoding step over a KV cache (model/ops.h attention_decode).
template <typename T>
void attention_decode(T* out, const T* qkv, int B, int S, int t, int C, int NH, int NKV, cudaStream_t s);

// FlashAttention-style kernels (bf16, head size 64 or 128; qkv and out 16-byte aligned).
bool flash_attention_supported(const void* qkv, int C, int NH, int NKV);
void flash_attention_forward(bf16* out, float* lse, float* row_max, const bf16* qkv, int B, int T_, int C, int NH,
                             int NKV, cudaStream_t s);
void flash_attention_backward(bf16* dqkv, const bf16* dout, const bf16* qkv, const bf16* out, const float* lse,
                              int B, int T_, int C, int NH, int NKV, bool deterministic, Scratch& scratch,
                              cudaStream_t s);
// D[b,h,t] = sum_d dout * out; also zeroes the FP32 dQ accumulator when one is given.
void flash_attention_backward_preprocess(float* D, float* dq_accum, const bf16* dout, const bf16* out, int B,
                                         int T_, int C, int NH, cudaStream_t s);
void flash_attention_backward_dkdv(bf16* dqkv, float* dq_accum, const bf16* dout, const bf16* qkv,
                                   const float* lse, const float* D, int B, int T_, int C, int NH, int NKV,
                                   cudaStream_t s);
void flash_attention_backward_dq(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* D,
                                 int B, int T_, int C, int NH, int NKV, cudaStream_t s);
void flash_attention_dq_convert(bf16* dqkv, const float* dq_accum, int B, int T_, int C, int NH, int NKV,
                                cudaStream_t s);

}  // namespace sixnd::cuda
