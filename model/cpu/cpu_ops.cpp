// CpuOps: the op set on the host. Each member picks the storage type from dtype() and calls the
// templated kernel of its own file; the kernels do the work with OpenMP.
#include "model/cpu/cpu_ops.h"

#include <string>

#include "core/cpu_features.h"
#include "core/error.h"
#include "model/cpu/attention.h"
#include "model/cpu/gemm_packed.h"
#include "model/cpu/kernels.h"
#include "model/cpu/matmul.h"

namespace sixnd {
namespace {

template <typename X>
X* x(void* p) {
    return static_cast<X*>(p);
}
template <typename X>
const X* x(const void* p) {
    return static_cast<const X*>(p);
}

// Calls f with a value of the storage type (float{} or bf16{}), so a generic lambda can name it.
template <typename F>
void dispatch(DType dtype, F&& f) {
    if (dtype == DType::f32)
        f(float{});
    else
        f(bf16{});
}

class CpuOps final : public Ops {
public:
    CpuOps(DType dtype, MemoryBackend& mem, cpu::Bf16Math math) : dtype_(dtype), mem_(mem), mm_(dtype, math, &mem) {
        SIXND_CHECK(mem.is_host(), "cpu ops", std::string("needs host memory, got '") + mem.name() + "'");
    }
    const char* name() const override { return "cpu"; }
    DType dtype() const override { return dtype_; }
    MemoryBackend& memory() override { return mem_; }

    void encoder_forward(void* out, const int32_t* inp, const void* wte, const void* wpe, int B, int T,
                         int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::encoder_forward(x<X>(out), inp, x<X>(wte), x<X>(wpe), B, T, C);
        });
    }
    void encoder_backward(void* dwte, void* dwpe, const void* dout, const int32_t* inp, int B, int T, int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::encoder_backward(x<X>(dwte), x<X>(dwpe), x<X>(dout), inp, B, T, C);
        });
    }

    void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias,
                           int N, int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::layernorm_forward(x<X>(out), mean, rstd, x<X>(inp), x<X>(weight), x<X>(bias), N, C);
        });
    }
    void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* inp1,
                                    const void* inp2, const void* weight, const void* bias, int N, int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::residual_layernorm_forward(x<X>(residual), x<X>(out), mean, rstd, x<X>(inp1), x<X>(inp2), x<X>(weight),
                                            x<X>(bias), N, C);
        });
    }
    void layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                            const void* weight, const float* mean, const float* rstd, int N, int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::layernorm_backward(x<X>(dinp), x<X>(dweight), x<X>(dbias), x<X>(dout), x<X>(inp), x<X>(weight), mean,
                                    rstd, N, C);
        });
    }

    void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias, int N, int C,
                        int OC) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::matmul_forward(mm_, x<X>(out), x<X>(pre_gelu), x<X>(inp), x<X>(weight), x<X>(bias), N, C, OC);
        });
    }
    void matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight,
                         int N, int C, int OC) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::matmul_backward(mm_, x<X>(dinp), x<X>(dweight), x<X>(dbias), x<X>(dout), x<X>(inp), x<X>(weight), N, C,
                                 OC);
        });
    }

    void gelu_forward(void* out, const void* inp, size_t n) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::gelu_forward(x<X>(out), x<X>(inp), n);
        });
    }
    void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::gelu_backward(x<X>(dinp), x<X>(inp), x<X>(dout), n);
        });
    }
    void residual_forward(void* out, const void* a, const void* b, size_t n) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::residual_forward(x<X>(out), x<X>(a), x<X>(b), n);
        });
    }

    void attention_forward(AttentionKind kind, void* out, float* stats, float* row_max, const void* qkv, int B, int T,
                           int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            if (kind == AttentionKind::naive)
                cpu::attention_naive_forward(x<X>(out), stats, row_max, x<X>(qkv), B, T, C, NH, NKV);
            else
                cpu::attention_flash_forward(x<X>(out), stats, row_max, x<X>(qkv), B, T, C, NH, NKV);
        });
    }
    void attention_backward(AttentionKind kind, void* dqkv, const void* dout, const void* qkv, const void* out,
                            const float* stats, int B, int T, int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            if (kind == AttentionKind::naive)
                cpu::attention_naive_backward(x<X>(dqkv), x<X>(dout), x<X>(qkv), stats, B, T, C, NH, NKV);
            else
                cpu::attention_flash_backward(x<X>(dqkv), x<X>(dout), x<X>(qkv), x<X>(out), stats, B, T, C, NH, NKV);
        });
    }

    void attention_decode(void* out, const void* qkv, int B, int S, int t, int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        SIXND_CHECK(t >= 0 && t < S, "attention decode",
                    "position " + std::to_string(t) + " outside the cache of " + std::to_string(S));
        dispatch(dtype_, [&](auto tag) {
            using X = decltype(tag);
            cpu::attention_decode(x<X>(out), x<X>(qkv), B, S, t, C, NH, NKV);
        });
    }

    void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::rmsnorm_forward(x<X>(out), rstd, x<X>(inp), x<X>(weight), N, C);
        });
    }
    void rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                          const float* rstd, int N, int C) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::rmsnorm_backward(x<X>(dinp), x<X>(dweight), x<X>(dout), x<X>(inp), x<X>(weight), rstd, N, C);
        });
    }
    void qk_norm_forward(void* out, float* rstd, const void* qkv, int N, int C, int NH, int NKV) override {
        check_heads(C, NH, NKV);
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::qk_norm_forward(x<X>(out), rstd, x<X>(qkv), N, C, NH, NKV);
        });
    }
    void qk_norm_backward(void* dqkv, const void* dout, const void* qkv, const float* rstd, int N, int C, int NH,
                          int NKV) override {
        check_heads(C, NH, NKV);
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::qk_norm_backward(x<X>(dqkv), x<X>(dout), x<X>(qkv), rstd, N, C, NH, NKV);
        });
    }
    void rope_forward(void* qkv, int B, int T, int C, int NH, int NKV, float theta, int pos0) override {
        check_rope(C, NH, NKV);
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::rope_forward(x<X>(qkv), B, T, C, NH, NKV, theta, pos0);
        });
    }
    void rope_backward(void* dqkv, int B, int T, int C, int NH, int NKV, float theta) override {
        check_rope(C, NH, NKV);
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::rope_backward(x<X>(dqkv), B, T, C, NH, NKV, theta);
        });
    }
    void swiglu_forward(void* out, const void* inp, int N, int H) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::swiglu_forward(x<X>(out), x<X>(inp), N, H);
        });
    }
    void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int H) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::swiglu_backward(x<X>(dinp), x<X>(inp), x<X>(dout), N, H);
        });
    }
    void relu2_forward(void* out, const void* inp, size_t n) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::relu2_forward(x<X>(out), x<X>(inp), n);
        });
    }
    void relu2_backward(void* dinp, const void* inp, const void* dout, size_t n) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::relu2_backward(x<X>(dinp), x<X>(inp), x<X>(dout), n);
        });
    }

    void classifier_forward_backward(void* logits, float* losses, const int32_t* targets, int N, int V, int Vp,
                                     float dloss, bool write_dlogits) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::classifier_forward_backward(x<X>(logits), losses, targets, N, V, Vp, dloss, write_dlogits);
        });
    }

    void adamw(void* params, float* master, const void* grads, float* m, float* v, size_t n,
               const AdamWArgs& a) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            nonfinite_ += cpu::adamw(x<X>(params), master, x<X>(grads), m, v, n, a);
        });
    }
    bool take_nonfinite_update() override {
        const bool any = nonfinite_ > 0;
        nonfinite_ = 0;
        return any;
    }
    double sum_squares(const void* p, size_t n) override {
        double r = 0.0;
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            r = cpu::sum_squares(x<X>(p), n);
        });
        return r;
    }
    void cast(void* dst, DType dst_type, const void* src, DType src_type, size_t n) override {
        dispatch(dst_type, [&](auto d) {
            using D = decltype(d);
            dispatch(src_type, [&](auto s) {
                using S = decltype(s);
                cpu::cast(x<D>(dst), x<S>(src), n);
            });
        });
    }

    void muon_momentum(float* out, float* m, const void* grads, size_t n, float beta, float grad_scale) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            cpu::muon_momentum(out, m, x<X>(grads), n, beta, grad_scale);
        });
    }
    void newton_schulz(float* xs, float* work, int rows, int cols, int steps) override {
        SIXND_CHECK(rows > 0 && cols > 0 && steps >= 0, "newton_schulz", "needs a non-empty matrix");
        // Always FP32, whatever the storage type: a second engine for bf16 runs.
        if (dtype_ != DType::f32 && !mm_f32_) mm_f32_ = std::make_unique<cpu::Matmul>(DType::f32);
        cpu::newton_schulz(dtype_ == DType::f32 ? mm_ : *mm_f32_, xs, work, rows, cols, steps);
    }
    void muon_apply(void* params, float* master, const float* update, size_t n, float lr, float scale,
                    float weight_decay) override {
        dispatch(dtype_, [&](auto t) {
            using X = decltype(t);
            nonfinite_ += cpu::muon_apply(x<X>(params), master, update, n, lr, scale, weight_decay);
        });
    }

private:
    static void check_heads(int C, int NH, int NKV) {
        SIXND_CHECK(NH > 0 && C % NH == 0, "attention",
                    "channels " + std::to_string(C) + " do not split into " + std::to_string(NH) + " heads");
        SIXND_CHECK(NKV > 0 && NKV <= NH && NH % NKV == 0, "attention",
                    std::to_string(NKV) + " key/value heads do not divide " + std::to_string(NH) + " heads");
    }
    static void check_rope(int C, int NH, int NKV) {
        check_heads(C, NH, NKV);
        SIXND_CHECK((C / NH) % 2 == 0, "rope", "head size " + std::to_string(C / NH) + " is odd");
    }

    DType dtype_;
    MemoryBackend& mem_;
    cpu::Matmul mm_;
    std::unique_ptr<cpu::Matmul> mm_f32_;
    size_t nonfinite_ = 0;  // parameters stored non-finite since take_nonfinite_update
};

}  // namespace

std::unique_ptr<Ops> make_cpu_ops(DType dtype, MemoryBackend& mem, cpu::Bf16Math bf16_math) {
    return std::make_unique<CpuOps>(dtype, mem, bf16_math);
}

namespace {

// The ISA sixnd's own kernels are compiled for (-march), and the FP32 lanes of its vectors;
// SIXND_CPU_ISA cannot change either.
struct CompiledIsa {
    const char* name;
    int lanes;
};
#if defined(__AVX512F__)
constexpr CompiledIsa kCompiledIsa{"avx512f", 16};
#elif defined(__AVX2__)
constexpr CompiledIsa kCompiledIsa{"avx2", 8};
#else
constexpr CompiledIsa kCompiledIsa{"baseline", 4};
#endif

}  // namespace

nlohmann::json cpu_host_json() {
    nlohmann::json j = cpu_features().to_json();
    j["matmul_engine"] = cpu::Matmul::engine();
    j["matmul_isa"] = cpu::Matmul::engine_isa();
    j["bf16_matmul"] = cpu::Matmul(DType::bf16).bf16_math();
    // Where bf16 flash attention multiplies (for head sizes that are multiples of 16).
    j["bf16_attention"] = cpu::flash_on_bf16_dots(64) ? "bf16" : "fp32";
    j["kernels_compiled_for"] = kCompiledIsa.name;
    j["kernels_bf16_dots"] = cpu::kBf16Dots;  // built with AVX512-BF16 (for the flash kernels)
    j["gemm_panel_width"] = cpu::kPanelWidth;
    return j;
}

int own_gemm_lanes(DType dtype) {
    // Matmul decides where bf16 runs (bf16_math); FP32 goes to the packed GEMM only without oneDNN.
    const bool own = std::string(cpu::Matmul::engine()) == "portable" ||
                     (dtype == DType::bf16 && std::string(cpu::Matmul(DType::bf16).bf16_math()) == "fp32");
    return own ? kCompiledIsa.lanes : 0;
}

}  // namespace sixnd
