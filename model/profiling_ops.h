// An Ops decorator that times every op it forwards and counts the FLOPs and bytes each one
// moves, computed from the op's shapes (the formulas sit beside each op in profiling_ops.cpp).
// It wraps any backend and times with the backend's OpClock: host clock and a sync around each
// op on a CPU, CUDA events on the stream on a GPU, so the queue is not stalled op by op; the
// times are read back (one wait) when seconds() or stats() is asked for. Ops are grouped by name
// and shape ("matmul_forward N=1024 C=384 OC=1152"). Timing happens only while enabled;
// seconds() is the running total after waiting for the device, so a caller can subtract the op
// time nested inside a region it times itself.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/ops.h"

namespace sixnd {

struct OpStats {
    std::string op;  // the op's name, without the shape
    long long calls = 0;
    double seconds = 0, flops = 0, bytes = 0;
};

class ProfilingOps final : public Ops {
public:
    // clock null: the inner backend's own (make_op_clock); tests pass another.
    explicit ProfilingOps(std::unique_ptr<Ops> inner, std::unique_ptr<OpClock> clock = nullptr);

    void set_enabled(bool on) { enabled_ = on; }
    const std::map<std::string, OpStats>& stats();
    double seconds();  // waits for the device
    void reset();

    const char* name() const override { return inner_->name(); }
    DType dtype() const override { return inner_->dtype(); }
    MemoryBackend& memory() override { return inner_->memory(); }

    void encoder_forward(void* out, const int32_t* inp, const void* wte, const void* wpe, int B, int T, int C) override;
    void encoder_backward(void* dwte, void* dwpe, const void* dout, const int32_t* inp, int B, int T, int C) override;
    void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias, int N,
                           int C) override;
    void residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* inp1, const void* inp2,
                                    const void* weight, const void* bias, int N, int C) override;
    void layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight,
                            const float* mean, const float* rstd, int N, int C) override;
    void matmul_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias, int N, int C,
                        int OC) override;
    void matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp, const void* weight, int N,
                         int C, int OC) override;
    void gelu_forward(void* out, const void* inp, size_t n) override;
    void gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) override;
    void residual_forward(void* out, const void* a, const void* b, size_t n) override;
    void attention_forward(AttentionKind kind, void* out, float* stats, float* row_max, const void* qkv, int B, int T,
                           int C, int NH, int NKV) override;
    void attention_backward(AttentionKind kind, void* dqkv, const void* dout, const void* qkv, const void* out,
                            const float* stats, int B, int T, int C, int NH, int NKV) override;
    void attention_decode(void* out, const void* qkv, int B, int S, int t, int C, int NH, int NKV) override;
    void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C) override;
    void rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                          const float* rstd, int N, int C) override;
    void qk_norm_forward(void* out, float* rstd, const void* qkv, int N, int C, int NH, int NKV) override;
    void qk_norm_backward(void* dqkv, const void* dout, const void* qkv, const float* rstd, int N, int C, int NH,
                          int NKV) override;
    void rope_forward(void* qkv, int B, int T, int C, int NH, int NKV, float theta, int pos0) override;
    void rope_backward(void* dqkv, int B, int T, int C, int NH, int NKV, float theta) override;
    void swiglu_forward(void* out, const void* inp, int N, int H) override;
    void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int H) override;
    void relu2_forward(void* out, const void* inp, size_t n) override;
    void relu2_backward(void* dinp, const void* inp, const void* dout, size_t n) override;
    void classifier_forward_backward(void* logits, float* losses, const int32_t* targets, int N, int V, int Vp, float dloss,
                                     bool write_dlogits) override;
    void adamw(void* params, float* master, const void* grads, float* m, float* v, size_t n, const AdamWArgs& a) override;
    bool take_nonfinite_update() override { return inner_->take_nonfinite_update(); }
    double sum_squares(const void* x, size_t n) override;
    void muon_momentum(float* out, float* m, const void* grads, size_t n, float beta, float grad_scale) override;
    void newton_schulz(float* x, float* work, int rows, int cols, int steps) override;
    void muon_apply(void* params, float* master, const float* update, size_t n, float lr, float scale,
                    float weight_decay) override;
    void cast(void* dst, DType dst_type, const void* src, DType src_type, size_t n) override;

private:
    // Runs f, timing it when enabled, and books its FLOPs and bytes under `key`.
    template <typename F> auto timed(const char* op, const std::string& shape, double flops, double bytes, F&& f);

    // Reads the times of the ops timed since the last flush into stats_.
    void flush();

    struct Pending {
        OpStats* stats;
        int begin, end;  // clock marks
    };
    std::unique_ptr<Ops> inner_;
    std::unique_ptr<OpClock> clock_;
    size_t es_;
    bool enabled_ = false;
    std::map<std::string, OpStats> stats_;
    std::vector<Pending> pending_;
    double seconds_ = 0;
};

}  // namespace sixnd
