// CudaOps: the op set (model/ops.h) on one CUDA device, for fp32 or bf16 storage. Each member
// checks its shapes' preconditions and forwards to the kernel file of the same name; matmuls
// go through cuBLASLt (model/cuda/matmul.cu). Everything runs on the legacy default stream,
// in order with CudaMemory's copies; NcclComm (dist/nccl_comm.cpp) orders its collectives
// against that stream by name (cudaStreamLegacy), so moving the ops to another stream means
// handing that stream to it too.
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>

#include "model/cuda/cuda_op_clock.h"
#include "model/cuda/cuda_ops.h"
#include "model/cuda/kernels.cuh"

namespace sixnd {
namespace {

using cuda::bf16;

template <typename T> class CudaOps final : public Ops {
public:
    CudaOps(MemoryBackend& mem, const CudaOpsOptions& opt)
        : mem_(mem), opt_(opt), scratch_(mem), matmul_(mem, stream_) {
        SIXND_CHECK(!mem.is_host(), "CudaOps", "needs device memory from make_cuda_memory");
    }
    const char* name() const override { return "cuda"; }
    DType dtype() const override { return dtype_of<T>(); }
    MemoryBackend& memory() override { return mem_; }
    std::unique_ptr<OpClock> make_op_clock() override { return make_cuda_event_clock(stream_); }

    void encoder_forward(void* out, const int32_t* inp, const void* wte, const void* wpe, int B, int T_,
                         int C) override {
        cuda::encoder_forward<T>(x(out), inp, cx(wte), cx(wpe), B, T_, C, stream_);
    }
    void encoder_backward(void* dwte, void* dwpe, const void* dout, const int32_t* inp, int B, int T_,
                          int C) override {
        cuda::encoder_backward<T>(x(dwte), x(dwpe), cx(dout), inp, B, T_, C, scratch_, stream_);
    }
    void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias,
                           int N, int C) override {
        cuda::layernorm_forward<T>(nullptr, x(out), mean, rstd, cx(inp), nullptr, cx(weight), cx(bias), N, C, stream_);
    }
    void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* inp1,
                                    const void* inp2, const void* weight, const void* bias, int N, int C) override {
        cuda::layernorm_forward<T>(x(residual), x(out), mean, rstd, cx(inp1), cx(inp2), cx(weight), cx(bias), N, C,
                                   stream_);
    }
    void layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                            const void* weight, const float* mean, const float* rstd, int N, int C) override {
        cuda::layernorm_backward<T>(x(dinp), x(dweight), x(dbias), cx(dout), cx(inp), cx(weight), mean, rstd, N, C,
                                    scratch_, stream_);
    }

    void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias, int N,
                        int C, int OC) override {
        cuda::GemmArgs g = linear(N, C, OC, inp, weight);
        g.bias = aligned_bias(bias, OC);
        if (pre_gelu) {
            g.C = out;
            g.gelu_aux = pre_gelu;
            if (matmul_.gemm(g)) return;
            // No fused-GELU algorithm for this shape: bias epilogue into pre_gelu, then GELU.
            g.gelu_aux = nullptr;
            g.C = pre_gelu;
            matmul_.gemm(g);
            cuda::gelu_forward<T>(x(out), cx(pre_gelu), static_cast<size_t>(N) * OC, stream_);
            return;
        }
        g.C = out;
        matmul_.gemm(g);
    }
    void matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                         const void* weight, int N, int C, int OC) override {
        if (dinp) {  // dinp[N,C] = dout[N,OC] @ W[OC,C]
            cuda::GemmArgs g = gemm_args(N, C, OC, false, false, dout, weight, dinp);
            matmul_.gemm(g);
        }
        {  // dweight[OC,C] += dout^T @ inp
            cuda::GemmArgs g = gemm_args(OC, C, N, true, false, dout, inp, dweight);
            g.beta = 1.0f;
            matmul_.gemm(g);
        }
        if (dbias) cuda::matmul_backward_bias<T>(x(dbias), cx(dout), N, OC, scratch_, stream_);
    }

    void gelu_forward(void* out, const void* inp, size_t n) override {
        cuda::gelu_forward<T>(x(out), cx(inp), n, stream_);
    }
    void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) override {
        cuda::gelu_backward<T>(x(dinp), cx(inp), cx(dout), n, stream_);
    }
    void residual_forward(void* out, const void* a, const void* b, size_t n) override {
        cuda::residual_forward<T>(x(out), cx(a), cx(b), n, stream_);
    }

    void attention_forward(AttentionKind kind, void* out, float* stats, float* row_max, const void* qkv, int B, int T_,
                           int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        if (use_flash(kind, qkv, out, C, NH, NKV)) {
            cuda::flash_attention_forward(reinterpret_cast<bf16*>(out), stats, row_max,
                                          reinterpret_cast<const bf16*>(qkv), B, T_, C, NH, NKV, stream_);
            return;
        }
        // naive keeps the probabilities in stats; flash-kind stats hold only the log-sum-exp.
        bool naive = kind == AttentionKind::naive;
        cuda::attention_naive_forward<T>(matmul_, x(out), naive ? stats : nullptr, naive ? nullptr : stats, row_max,
                                         cx(qkv), B, T_, C, NH, NKV, scratch_, stream_);
    }
    void attention_backward(AttentionKind kind, void* dqkv, const void* dout, const void* qkv, const void* out,
                            const float* stats, int B, int T_, int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        if (use_flash(kind, qkv, out, C, NH, NKV) && cuda::aligned16(dqkv) && cuda::aligned16(dout)) {
            cuda::flash_attention_backward(reinterpret_cast<bf16*>(dqkv), reinterpret_cast<const bf16*>(dout),
                                           reinterpret_cast<const bf16*>(qkv), reinterpret_cast<const bf16*>(out),
                                           stats, B, T_, C, NH, NKV, opt_.deterministic, scratch_, stream_);
            return;
        }
        bool naive = kind == AttentionKind::naive;
        cuda::attention_naive_backward<T>(matmul_, x(dqkv), cx(dout), cx(qkv), naive ? stats : nullptr,
                                          naive ? nullptr : stats, B, T_, C, NH, NKV, scratch_, stream_);
    }

    void attention_decode(void* out, const void* qkv, int B, int S, int t, int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        SIXND_CHECK(t >= 0 && t < S, "attention_decode", "position outside the cache");
        cuda::attention_decode<T>(x(out), cx(qkv), B, S, t, C, NH, NKV, stream_);
    }

    void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C) override {
        cuda::rmsnorm_forward<T>(x(out), rstd, cx(inp), cx(weight), N, C, stream_);
    }
    void rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                          const float* rstd, int N, int C) override {
        cuda::rmsnorm_backward<T>(x(dinp), x(dweight), cx(dout), cx(inp), cx(weight), rstd, N, C, scratch_, stream_);
    }
    void qk_norm_forward(void* out, float* rstd, const void* qkv, int N, int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        cuda::qk_norm_forward<T>(x(out), rstd, cx(qkv), N, C, NH, NKV, stream_);
    }
    void qk_norm_backward(void* dqkv, const void* dout, const void* qkv, const float* rstd, int N, int C, int NH,
                          int NKV) override {
        check_heads(C, NH, NKV);
        cuda::qk_norm_backward<T>(x(dqkv), cx(dout), cx(qkv), rstd, N, C, NH, NKV, stream_);
    }
    void rope_forward(void* qkv, int B, int T_, int C, int NH, int NKV, float theta, int pos0) override {
        check_rope(C, NH, NKV, theta);
        cuda::rope_forward<T>(x(qkv), B, T_, C, NH, NKV, theta, pos0, scratch_, stream_);
    }
    void rope_backward(void* dqkv, int B, int T_, int C, int NH, int NKV, float theta) override {
        check_rope(C, NH, NKV, theta);
        cuda::rope_backward<T>(x(dqkv), B, T_, C, NH, NKV, theta, scratch_, stream_);
    }
    void swiglu_forward(void* out, const void* inp, int N, int H) override {
        cuda::swiglu_forward<T>(x(out), cx(inp), N, H, stream_);
    }
    void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int H) override {
        cuda::swiglu_backward<T>(x(dinp), cx(inp), cx(dout), N, H, stream_);
    }
    void relu2_forward(void* out, const void* inp, size_t n) override {
        cuda::relu2_forward<T>(x(out), cx(inp), n, stream_);
    }
    void relu2_backward(void* dinp, const void* inp, const void* dout, size_t n) override {
        cuda::relu2_backward<T>(x(dinp), cx(inp), cx(dout), n, stream_);
    }

    void classifier_forward_backward(void* logits, float* losses, const int32_t* targets, int N, int V, int Vp,
                                     float dloss, bool write_dlogits) override {
        SIXND_CHECK(V > 0 && V <= Vp, "classifier", "need 0 < V <= Vp");
        cuda::classifier_forward_backward<T>(x(logits), losses, targets, N, V, Vp, dloss, write_dlogits, stream_);
    }

    void adamw(void* params, float* master, const void* grads, float* m, float* v, size_t n,
               const AdamWArgs& a) override {
        cuda::adamw<T>(x(params), master, cx(grads), m, v, n, adamw_step(a), nonfinite_.device, stream_);
    }
    bool take_nonfinite_update() override {
        SIXND_CUDA(cudaStreamSynchronize(stream_));
        const bool any = *nonfinite_.host != 0;
        *nonfinite_.host = 0;
        return any;
    }
    double sum_squares(const void* xs, size_t n) override { return cuda::sum_squares<T>(cx(xs), n, scratch_, stream_); }
    void cast(void* dst, DType dst_type, const void* src, DType src_type, size_t n) override {
        if (dst_type == src_type) {
            SIXND_CUDA(cudaMemcpyAsync(dst, src, n * dtype_size(dst_type), cudaMemcpyDeviceToDevice, stream_));
        } else if (dst_type == DType::f32) {
            cuda::cast<float, bf16>(static_cast<float*>(dst), static_cast<const bf16*>(src), n, stream_);
        } else {
            cuda::cast<bf16, float>(static_cast<bf16*>(dst), static_cast<const float*>(src), n, stream_);
        }
    }

    void muon_momentum(float* out, float* m, const void* grads, size_t n, float beta, float grad_scale) override {
        cuda::muon_momentum<T>(out, m, cx(grads), n, beta, grad_scale, stream_);
    }
    void newton_schulz(float* xs, float* work, int rows, int cols, int steps) override {
        SIXND_CHECK(rows > 0 && cols > 0 && steps >= 0, "newton_schulz", "needs a non-empty matrix");
        cuda::newton_schulz(matmul_, xs, work, rows, cols, steps, scratch_, stream_);
    }
    void muon_apply(void* params, float* master, const float* update, size_t n, float lr, float scale,
                    float weight_decay) override {
        cuda::muon_apply<T>(x(params), master, update, n, lr, scale, weight_decay, nonfinite_.device, stream_);
    }

private:
    static T* x(void* p) { return static_cast<T*>(p); }
    static const T* cx(const void* p) { return static_cast<const T*>(p); }

    static void check_heads(int C, int NH, int NKV) {
        SIXND_CHECK(NH > 0 && C % NH == 0, "attention", "C must be a multiple of NH");
        SIXND_CHECK(NKV > 0 && NH % NKV == 0, "attention", "NH must be a multiple of NKV");
    }
    static void check_rope(int C, int NH, int NKV, float theta) {
        check_heads(C, NH, NKV);
        SIXND_CHECK((C / NH) % 2 == 0, "rope", "the head size must be even");
        SIXND_CHECK(theta > 0.0f, "rope", "theta must be positive");
    }
    bool use_flash(AttentionKind kind, const void* qkv, const void* out, int C, int NH, int NKV) const {
        return kind == AttentionKind::flash && std::is_same<T, bf16>::value &&
               cuda::flash_attention_supported(qkv, C, NH, NKV) && cuda::aligned16(out);
    }

    // cuBLASLt's bias epilogue may assume a 16-byte aligned bias (its alignment preferences cover
    // A to D, not the bias), and a bias inside the flat parameter buffer sits at a multiple of C
    // elements, so not always 16 bytes in: such a bias is copied to the scratch first.
    const void* aligned_bias(const void* bias, int OC) {
        if (!bias || cuda::aligned16(bias)) return bias;
        void* copy = scratch_.get(sizeof(T) * OC);
        SIXND_CUDA(cudaMemcpyAsync(copy, bias, sizeof(T) * OC, cudaMemcpyDeviceToDevice, stream_));
        return copy;
    }

    static cuda::GemmArgs gemm_args(int M, int N, int K, bool ta, bool tb, const void* A, const void* B, void* C) {
        return cuda::dense_gemm(M, N, K, ta, tb, A, B, C, cuda::DataType<T>::value, cuda::DataType<T>::value);
    }
    // out[N,OC] = inp[N,C] @ W[OC,C]^T
    static cuda::GemmArgs linear(int N, int C, int OC, const void* inp, const void* weight) {
        return gemm_args(N, OC, C, false, true, inp, weight, nullptr);
    }

    MemoryBackend& mem_;
    CudaOpsOptions opt_;
    cudaStream_t stream_ = nullptr;
    cuda::Scratch scratch_;
    cuda::Matmul matmul_;
    // The update kernels' non-finite flag: pinned host memory mapped into the device's address
    // space, read after one synchronisation, and outside the device memory ledger.
    struct MappedFlag {
        unsigned* host = nullptr;
        unsigned* device = nullptr;
        MappedFlag() {
            SIXND_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(unsigned), cudaHostAllocMapped));
            *host = 0;
            SIXND_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0));
        }
        ~MappedFlag() { cudaFreeHost(host); }
        MappedFlag(const MappedFlag&) = delete;
        MappedFlag& operator=(const MappedFlag&) = delete;
    } nonfinite_;
};

}  // namespace

std::unique_ptr<Ops> make_cuda_ops(DType dtype, MemoryBackend& mem, const CudaOpsOptions& options) {
    if (dtype == DType::f32) return std::make_unique<CudaOps<float>>(mem, options);
    return std::make_unique<CudaOps<bf16>>(mem, options);
}

}  // namespace sixnd
