#include "model/profiling_ops.h"

#include <algorithm>
#include <string>

namespace sixnd {

namespace {

std::string dims(std::initializer_list<std::pair<const char*, long long>> d) {
    std::string s;
    for (const auto& [k, v] : d) s += std::string(s.empty() ? "" : " ") + k + "=" + std::to_string(v);
    return s;
}

}  // namespace

ProfilingOps::ProfilingOps(std::unique_ptr<Ops> inner, std::unique_ptr<OpClock> clock)
    : inner_(std::move(inner)), clock_(clock ? std::move(clock) : inner_->make_op_clock()), es_(dtype_size(inner_->dtype())) {}

const std::map<std::string, OpStats>& ProfilingOps::stats() {
    flush();
    return stats_;
}

double ProfilingOps::seconds() {
    flush();
    return seconds_;
}

void ProfilingOps::reset() {
    flush();
    stats_.clear();
    seconds_ = 0;
}

void ProfilingOps::flush() {
    if (pending_.empty()) return;
    inner_->memory().sync();
    clock_->resolve();
    for (const Pending& p : pending_) {
        const double s = clock_->seconds(p.begin, p.end);
        p.stats->seconds += s;
        seconds_ += s;
    }
    pending_.clear();
    clock_->clear();
}

// The op is booked at once (calls, FLOPs, bytes); its time when the clock is read (flush).
template <typename F> auto ProfilingOps::timed(const char* op, const std::string& shape, double flops, double bytes, F&& f) {
    if (!enabled_) return f();
    OpStats& st = stats_[std::string(op) + " " + shape];
    st.op = op;
    st.calls++;
    st.flops += flops;
    st.bytes += bytes;
    struct Mark {
        ProfilingOps* self;
        OpStats* st;
        int begin;
        ~Mark() { self->pending_.push_back({st, begin, self->clock_->mark()}); }
    } mark{this, &st, clock_->mark()};
    return f();
}

// Gather and scatter-add: no arithmetic to speak of; bytes are the rows read and written.
void ProfilingOps::encoder_forward(void* out, const int32_t* inp, const void* wte, const void* wpe, int B, int T, int C) {
    const double n = double(B) * T * C;
    timed("encoder_forward", dims({{"B", B}, {"T", T}, {"C", C}}), n, 3 * n * es_ + 4.0 * B * T,
          [&] { inner_->encoder_forward(out, inp, wte, wpe, B, T, C); });
}
void ProfilingOps::encoder_backward(void* dwte, void* dwpe, const void* dout, const int32_t* inp, int B, int T, int C) {
    const double n = double(B) * T * C;
    timed("encoder_backward", dims({{"B", B}, {"T", T}, {"C", C}}), 2 * n, 5 * n * es_ + 4.0 * B * T,
          [&] { inner_->encoder_backward(dwte, dwpe, dout, inp, B, T, C); });
}

// Layernorm: mean, variance, normalise, scale and shift ~ 8 FLOPs per element; reads x, writes
// y (and the residual sum, 1 FLOP and 2 more tensors, in the fused form).
void ProfilingOps::layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                     const void* bias, int N, int C) {
    const double n = double(N) * C;
    timed("layernorm_forward", dims({{"N", N}, {"C", C}}), 8 * n, 2 * n * es_ + 2.0 * C * es_ + 8.0 * N,
          [&] { inner_->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C); });
}
void ProfilingOps::residual_layernorm_forward(void* residual, void* out, float* mean, float* rstd, const void* inp1,
                                              const void* inp2, const void* weight, const void* bias, int N, int C) {
    const double n = double(N) * C;
    timed("residual_layernorm_forward", dims({{"N", N}, {"C", C}}), 9 * n, 4 * n * es_ + 2.0 * C * es_ + 8.0 * N,
          [&] { inner_->residual_layernorm_forward(residual, out, mean, rstd, inp1, inp2, weight, bias, N, C); });
}
// Backward: recompute x-hat, two row reductions, the input gradient ~ 14 FLOPs per element;
// reads dout and x, reads and writes dinp.
void ProfilingOps::layernorm_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                      const void* weight, const float* mean, const float* rstd, int N, int C) {
    const double n = double(N) * C;
    timed("layernorm_backward", dims({{"N", N}, {"C", C}}), 14 * n, 4 * n * es_ + 5.0 * C * es_ + 8.0 * N,
          [&] { inner_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C); });
}

// Linear: 2 N C OC; reads the input and the weight, writes the output (and the pre-GELU copy).
void ProfilingOps::matmul_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias, int N,
                                  int C, int OC) {
    const double flops = 2.0 * N * C * OC + (pre_gelu ? 15.0 * N * OC : 0);
    const double bytes = (double(N) * C + double(OC) * C + double(N) * OC * (pre_gelu ? 2 : 1)) * es_;
    timed(pre_gelu ? "matmul_gelu_forward" : "matmul_forward", dims({{"N", N}, {"C", C}, {"OC", OC}}), flops, bytes,
          [&] { inner_->matmul_forward(out, pre_gelu, inp, weight, bias, N, C, OC); });
}
// Backward: dinp 2 N C OC, dweight 2 N C OC (accumulated: read and written), dbias N OC.
void ProfilingOps::matmul_backward(void* dinp, void* dweight, void* dbias, const void* dout, const void* inp,
                                   const void* weight, int N, int C, int OC) {
    const double flops = (dinp ? 4.0 : 2.0) * N * C * OC + (dbias ? double(N) * OC : 0);
    const double bytes = (double(N) * OC + double(N) * C + double(OC) * C * (dinp ? 3 : 2) + (dinp ? double(N) * C : 0)) * es_;
    timed("matmul_backward", dims({{"N", N}, {"C", C}, {"OC", OC}}), flops, bytes,
          [&] { inner_->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC); });
}

// GELU (tanh form) ~ 15 FLOPs per element forward, ~ 25 backward.
void ProfilingOps::gelu_forward(void* out, const void* inp, size_t n) {
    timed("gelu_forward", dims({{"n", static_cast<long long>(n)}}), 15.0 * n, 2.0 * n * es_,
          [&] { inner_->gelu_forward(out, inp, n); });
}
void ProfilingOps::gelu_backward(void* dinp, const void* inp, const void* dout, size_t n) {
    timed("gelu_backward", dims({{"n", static_cast<long long>(n)}}), 25.0 * n, 3.0 * n * es_,
          [&] { inner_->gelu_backward(dinp, inp, dout, n); });
}
void ProfilingOps::residual_forward(void* out, const void* a, const void* b, size_t n) {
    timed("residual_forward", dims({{"n", static_cast<long long>(n)}}), double(n), 3.0 * n * es_,
          [&] { inner_->residual_forward(out, a, b, n); });
}

// Causal attention: scores and weighted values over the lower triangle, 2 x 2 B T^2 C / 2
// forward (plus ~5 FLOPs per score for the softmax); backward recomputes the scores and runs
// four products, 2.5 x the forward. Bytes: qkv in, output out, the statistics; naive attention
// also writes (forward) and reads (backward) the B NH T^2 probabilities.
static double attention_flops(int B, int T, int C, int NH) {
    return 2.0 * B * double(T) * T * C + 2.5 * B * NH * double(T) * T;
}
static double attention_stats_bytes(AttentionKind kind, int B, int T, int NH) {
    return 4.0 * Ops::attention_stats_floats(kind, B, T, NH);
}
void ProfilingOps::attention_forward(AttentionKind kind, void* out, float* stats, float* row_max, const void* qkv, int B,
                                     int T, int C, int NH, int NKV) {
    const double n = double(B) * T * C, nqkv = double(B) * T * Ops::qkv_width(C, NH, NKV);
    timed(kind == AttentionKind::flash ? "attention_forward(flash)" : "attention_forward(naive)",
          dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), attention_flops(B, T, C, NH),
          (nqkv + n) * es_ + attention_stats_bytes(kind, B, T, NH) + (row_max ? 4.0 * B * NH * T : 0.0),
          [&] { inner_->attention_forward(kind, out, stats, row_max, qkv, B, T, C, NH, NKV); });
}
void ProfilingOps::attention_backward(AttentionKind kind, void* dqkv, const void* dout, const void* qkv, const void* out,
                                      const float* stats, int B, int T, int C, int NH, int NKV) {
    const double n = double(B) * T * C, nqkv = double(B) * T * Ops::qkv_width(C, NH, NKV);
    timed(kind == AttentionKind::flash ? "attention_backward(flash)" : "attention_backward(naive)",
          dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), 2.5 * attention_flops(B, T, C, NH),
          (2 * nqkv + 2 * n) * es_ + attention_stats_bytes(kind, B, T, NH),
          [&] { inner_->attention_backward(kind, dqkv, dout, qkv, out, stats, B, T, C, NH, NKV); });
}
void ProfilingOps::attention_decode(void* out, const void* qkv, int B, int S, int t, int C, int NH, int NKV) {
    const double keys = double(B) * (t + 1) * C, kv = double(B) * (t + 1) * 2.0 * NKV * (C / NH);
    timed("attention_decode", dims({{"B", B}, {"S", S}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), 4 * keys,
          (kv + 2.0 * B * C) * es_, [&] { inner_->attention_decode(out, qkv, B, S, t, C, NH, NKV); });
}

// The knobs' elementwise ops: a handful of FLOPs per element, bound by their reads and writes.
void ProfilingOps::rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C) {
    const double n = double(N) * C;
    timed("rmsnorm_forward", dims({{"N", N}, {"C", C}}), 4 * n, 2 * n * es_ + 4.0 * N,
          [&] { inner_->rmsnorm_forward(out, rstd, inp, weight, N, C); });
}
void ProfilingOps::rmsnorm_backward(void* dinp, void* dweight, const void* dout, const void* inp, const void* weight,
                                    const float* rstd, int N, int C) {
    const double n = double(N) * C;
    timed("rmsnorm_backward", dims({{"N", N}, {"C", C}}), 8 * n, 4 * n * es_ + 4.0 * N,
          [&] { inner_->rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C); });
}
void ProfilingOps::qk_norm_forward(void* out, float* rstd, const void* qkv, int N, int C, int NH, int NKV) {
    const double n = double(N) * Ops::qkv_width(C, NH, NKV);
    timed("qk_norm_forward", dims({{"N", N}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), 4 * n, 2 * n * es_,
          [&] { inner_->qk_norm_forward(out, rstd, qkv, N, C, NH, NKV); });
}
void ProfilingOps::qk_norm_backward(void* dqkv, const void* dout, const void* qkv, const float* rstd, int N, int C, int NH,
                                    int NKV) {
    const double n = double(N) * Ops::qkv_width(C, NH, NKV);
    timed("qk_norm_backward", dims({{"N", N}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), 8 * n, 3 * n * es_,
          [&] { inner_->qk_norm_backward(dqkv, dout, qkv, rstd, N, C, NH, NKV); });
}
void ProfilingOps::rope_forward(void* qkv, int B, int T, int C, int NH, int NKV, float theta, int pos0) {
    const double n = double(B) * T * (C + double(NKV) * (C / NH));
    timed("rope_forward", dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), 3 * n, 2 * n * es_,
          [&] { inner_->rope_forward(qkv, B, T, C, NH, NKV, theta, pos0); });
}
void ProfilingOps::rope_backward(void* dqkv, int B, int T, int C, int NH, int NKV, float theta) {
    const double n = double(B) * T * (C + double(NKV) * (C / NH));
    timed("rope_backward", dims({{"B", B}, {"T", T}, {"C", C}, {"NH", NH}, {"NKV", NKV}}), 3 * n, 2 * n * es_,
          [&] { inner_->rope_backward(dqkv, B, T, C, NH, NKV, theta); });
}
void ProfilingOps::swiglu_forward(void* out, const void* inp, int N, int H) {
    const double n = double(N) * H;
    timed("swiglu_forward", dims({{"N", N}, {"H", H}}), 6 * n, 3 * n * es_,
          [&] { inner_->swiglu_forward(out, inp, N, H); });
}
void ProfilingOps::swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int H) {
    const double n = double(N) * H;
    timed("swiglu_backward", dims({{"N", N}, {"H", H}}), 12 * n, 5 * n * es_,
          [&] { inner_->swiglu_backward(dinp, inp, dout, N, H); });
}
void ProfilingOps::relu2_forward(void* out, const void* inp, size_t n) {
    timed("relu2_forward", dims({{"n", static_cast<long long>(n)}}), 2.0 * n, 2.0 * n * es_,
          [&] { inner_->relu2_forward(out, inp, n); });
}
void ProfilingOps::relu2_backward(void* dinp, const void* inp, const void* dout, size_t n) {
    timed("relu2_backward", dims({{"n", static_cast<long long>(n)}}), 3.0 * n, 3.0 * n * es_,
          [&] { inner_->relu2_backward(dinp, inp, dout, n); });
}

// Softmax cross-entropy over the real vocabulary: max, exp, sum, the gradient ~ 5 FLOPs per
// logit; reads the logits and (with dlogits) writes them back, padded columns included.
void ProfilingOps::classifier_forward_backward(void* logits, float* losses, const int32_t* targets, int N, int V, int Vp,
                                               float dloss, bool write_dlogits) {
    const double n = double(N) * Vp;
    timed("classifier_forward_backward", dims({{"N", N}, {"V", V}, {"Vp", Vp}}), 5.0 * N * V,
          n * es_ * (write_dlogits ? 2 : 1) + 8.0 * N,
          [&] { inner_->classifier_forward_backward(logits, losses, targets, N, V, Vp, dloss, write_dlogits); });
}

// AdamW ~ 12 FLOPs per element (moments, bias correction, sqrt, divide, decay); reads the
// gradient, reads and writes both moments, the parameter and the master copy.
void ProfilingOps::adamw(void* params, float* master, const void* grads, float* m, float* v, size_t n, const AdamWArgs& a) {
    const double bytes = double(n) * (es_ + 16 + 2 * es_ + (master ? 8 : 0));
    timed("adamw", "", 12.0 * n, bytes, [&] { inner_->adamw(params, master, grads, m, v, n, a); });
}
double ProfilingOps::sum_squares(const void* x, size_t n) {
    return timed("sum_squares", "", 2.0 * n, double(n) * es_, [&] { return inner_->sum_squares(x, n); });
}
void ProfilingOps::cast(void* dst, DType dst_type, const void* src, DType src_type, size_t n) {
    timed("cast", "", 0, double(n) * (dtype_size(dst_type) + dtype_size(src_type)),
          [&] { inner_->cast(dst, dst_type, src, src_type, n); });
}

// Muon momentum: 5 FLOPs per element; reads the gradient, reads and writes the momentum, writes
// the FP32 direction.
void ProfilingOps::muon_momentum(float* out, float* m, const void* grads, size_t n, float beta, float grad_scale) {
    timed("muon_momentum", "", 5.0 * n, double(n) * (es_ + 12), [&] { inner_->muon_momentum(out, m, grads, n, beta, grad_scale); });
}
// Newton-Schulz (s = min, l = max of the sides): per step 4 s^2 l + 2 s^3 FLOPs in three GEMMs
// (Muon::ns_flops counts the same); bytes: the matrix and the two s x s buffers per GEMM, FP32.
void ProfilingOps::newton_schulz(float* x, float* work, int rows, int cols, int steps) {
    const double s = std::min(rows, cols), l = std::max(rows, cols);
    timed("newton_schulz", dims({{"rows", rows}, {"cols", cols}}), steps * (4 * s * s * l + 2 * s * s * s),
          steps * 4.0 * (4 * s * l + 4 * s * s), [&] { inner_->newton_schulz(x, work, rows, cols, steps); });
}
// Muon update: 5 FLOPs per element; reads the direction, reads and writes the parameter and master.
void ProfilingOps::muon_apply(void* params, float* master, const float* update, size_t n, float lr, float scale,
                              float weight_decay) {
    timed("muon_apply", "", 5.0 * n, double(n) * (4 + 2 * es_ + (master ? 8 : 0)),
          [&] { inner_->muon_apply(params, master, update, n, lr, scale, weight_decay); });
}

}  // namespace sixnd
