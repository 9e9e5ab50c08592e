#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/transfer.h"

namespace sixnd {

// Activation memory for one (B, T). Which tensors each layer owns and which it shares with the
// other layers is the recompute policy: a shared tensor is rebuilt in backward before use.
struct GPT::Activations {
    struct Layer {
        void* ln1;
        float* ln1_mean;
        float* ln1_rstd;
        void* qkv;
        void* atty;
        float* att_stats;
        void* res2;
        void* ln2;
        float* ln2_mean;
        float* ln2_rstd;
        void* fch;       // pre-GELU
        void* fch_gelu;  // post-GELU
        float* att_row_max;  // [B,NH,T] when tracking, else null
    };
    std::vector<DeviceBuffer> owned;
    int32_t* inputs = nullptr;
    int32_t* targets = nullptr;
    std::vector<void*> x;  // x[0] = embeddings, x[l+1] = output of block l
    std::vector<Layer> layers;
    void* proj = nullptr;  // attention / MLP projection output, consumed at once by a residual
    void* lnf = nullptr;
    float* lnf_mean = nullptr;
    float* lnf_rstd = nullptr;
    void* logits = nullptr;  // becomes dlogits after a for_backward pass
    float* losses = nullptr;
    // backward workspace
    void* dres = nullptr;
    void* dbuf = nullptr;
    void* dfch = nullptr;
    void* dqkv = nullptr;
};

GPT::GPT(const GPTConfig& cfg, Ops& ops, const ModelOptions& opt)
    : cfg_(cfg), ops_(ops), mem_(ops.memory()), opt_(opt), layout_(cfg, opt.unit_align) {
    cfg_.validate("model config");
    const size_t es = dtype_size(ops.dtype()), bytes = layout_.total() * es;
    if (opt.allocate_params) {
        params_ = DeviceBuffer(&mem_, bytes, MemCategory::params);
        mem_.memset(params_.get(), 0, bytes);
    }
    if (opt.allocate_grads) {
        grads_ = DeviceBuffer(&mem_, bytes, MemCategory::grads);
        mem_.memset(grads_.get(), 0, bytes);
    }
    for (const auto& u : layout_.units()) {
        unit_params_.push_back(params_ ? params_.as<char>() + u.begin * es : nullptr);
        unit_grads_.push_back(grads_ ? grads_.as<char>() + u.begin * es : nullptr);
    }
}

std::vector<UnitSpan> GPT::unit_spans() const {
    std::vector<UnitSpan> out;
    for (const auto& u : layout_.units()) out.push_back({u.begin, u.end});
    return out;
}

void GPT::map_unit(int unit, void* params, void* grads) {
    if (params) unit_params_.at(unit) = params;
    if (grads) unit_grads_.at(unit) = grads;
}

GPT::~GPT() = default;

void* GPT::param(const TensorInfo& t) const {
    return static_cast<char*>(unit_params_[t.unit]) + (t.offset - layout_.units()[t.unit].begin) * dtype_size(ops_.dtype());
}
void* GPT::grad(const TensorInfo& t) const {
    return static_cast<char*>(unit_grads_[t.unit]) + (t.offset - layout_.units()[t.unit].begin) * dtype_size(ops_.dtype());
}

void GPT::set_params(const std::vector<float>& host) {
    if (!params_) throw Error("model parameters", "this model does not hold the full parameters (ZeRO-3)");
    if (host.size() != layout_.total())
        throw Error("model parameters", "expected " + std::to_string(layout_.total()) + " values, got " +
                                            std::to_string(host.size()));
    upload_f32(mem_, params_.get(), ops_.dtype(), host.data(), host.size());
}
std::vector<float> GPT::get_grads() const { return download_f32(mem_, grads_.get(), ops_.dtype(), layout_.total()); }
void GPT::zero_grad() {
    if (grads_) mem_.memset(grads_.get(), 0, grads_.bytes());
}

void GPT::ensure_activations(int B, int T) {
    if (T <= 0 || B <= 0) throw Error("batch", "batch size and sequence length must be positive");
    if (T > cfg_.max_seq_len)
        throw Error("--seq-len", "sequence length " + std::to_string(T) + " exceeds the model's max_seq_len " +
                                     std::to_string(cfg_.max_seq_len));
    if (act_ && B == B_ && T == T_) return;
    act_.reset();
    auto a = std::make_unique<Activations>();
    const size_t N = static_cast<size_t>(B) * T, C = cfg_.n_embd, L = cfg_.n_layer;
    const size_t es = dtype_size(ops_.dtype());
    auto alloc = [&](size_t bytes, MemCategory cat) {
        a->owned.emplace_back(&mem_, bytes, cat);
        return a->owned.back().get();
    };
    auto X = [&](size_t elems, MemCategory cat = MemCategory::activations) { return alloc(elems * es, cat); };
    auto F = [&](size_t elems) { return static_cast<float*>(alloc(elems * 4, MemCategory::activations)); };

    a->inputs = static_cast<int32_t*>(alloc(N * 4, MemCategory::activations));
    a->targets = static_cast<int32_t*>(alloc(N * 4, MemCategory::activations));
    for (size_t l = 0; l <= L; l++) a->x.push_back(X(N * C));
    const size_t stats = Ops::attention_stats_floats(opt_.attention, B, T, cfg_.n_head);
    // A layer's tensors; those already set in `shared` are reused instead of allocated.
    auto make_layer = [&](const Activations::Layer& shared) {
        Activations::Layer y{};
        y.ln1 = shared.ln1 ? shared.ln1 : X(N * C);
        y.ln1_mean = F(N);
        y.ln1_rstd = F(N);
        y.qkv = X(N * 3 * C);
        y.atty = X(N * C);
        y.att_stats = F(stats);
        y.res2 = X(N * C);
        y.ln2 = shared.ln2 ? shared.ln2 : X(N * C);
        y.ln2_mean = F(N);
        y.ln2_rstd = F(N);
        y.fch = X(N * 4 * C);
        y.fch_gelu = shared.fch_gelu ? shared.fch_gelu : X(N * 4 * C);
        y.att_row_max = nullptr;
        return y;
    };
    Activations::Layer shared{};
    if (opt_.recompute == Recompute::full) {
        a->layers.assign(L, make_layer(shared));
    } else {
        if (opt_.recompute == Recompute::selective) {
            shared.ln1 = X(N * C);
            shared.ln2 = X(N * C);
            shared.fch_gelu = X(N * 4 * C);
        }
        for (size_t l = 0; l < L; l++) a->layers.push_back(make_layer(shared));
    }
    if (track_attention_max_)
        for (auto& y : a->layers) y.att_row_max = F(N * cfg_.n_head);
    a->proj = X(N * C);
    a->lnf = X(N * C);
    a->lnf_mean = F(N);
    a->lnf_rstd = F(N);
    a->logits = X(N * cfg_.padded_vocab_size);
    a->losses = F(N);
    a->dres = X(N * C, MemCategory::workspace);
    a->dbuf = X(N * C, MemCategory::workspace);
    a->dfch = X(N * 4 * C, MemCategory::workspace);
    a->dqkv = X(N * 3 * C, MemCategory::workspace);
    act_ = std::move(a);
    B_ = B;
    T_ = T;
}

void GPT::block_forward(int l, bool keep_output) {
    Activations& a = *act_;
    Activations::Layer& y = a.layers[l];
    const int N = B_ * T_, C = cfg_.n_embd;
    auto W = [&](BlockTensor t) { return param(layout_.block_tensor(l, t)); };
    ops_.layernorm_forward(y.ln1, y.ln1_mean, y.ln1_rstd, a.x[l], W(kLn1W), W(kLn1B), N, C);
    ops_.matmul_forward(y.qkv, nullptr, y.ln1, W(kQkvW), W(kQkvB), N, C, 3 * C);
    ops_.attention_forward(opt_.attention, y.atty, y.att_stats, y.att_row_max, y.qkv, B_, T_, C, cfg_.n_head,
                           cfg_.n_head);
    ops_.matmul_forward(a.proj, nullptr, y.atty, W(kAttProjW), W(kAttProjB), N, C, C);
    ops_.residual_layernorm_forward(y.res2, y.ln2, y.ln2_mean, y.ln2_rstd, a.x[l], a.proj, W(kLn2W), W(kLn2B), N, C);
    ops_.matmul_forward(y.fch_gelu, y.fch, y.ln2, W(kFcW), W(kFcB), N, C, 4 * C);
    if (!keep_output) return;
    ops_.matmul_forward(a.proj, nullptr, y.fch_gelu, W(kFcProjW), W(kFcProjB), N, 4 * C, C);
    ops_.residual_forward(a.x[l + 1], y.res2, a.proj, static_cast<size_t>(N) * C);
}

// On entry a.dres holds dL/dx_{l+1}; on exit dL/dx_l.
void GPT::block_backward(int l) {
    Activations& a = *act_;
    Activations::Layer& y = a.layers[l];
    const int N = B_ * T_, C = cfg_.n_embd;
    auto W = [&](BlockTensor t) { return param(layout_.block_tensor(l, t)); };
    auto G = [&](BlockTensor t) { return grad(layout_.block_tensor(l, t)); };
    if (opt_.recompute == Recompute::full) {
        block_forward(l, false);
    } else if (opt_.recompute == Recompute::selective) {
        ops_.layernorm_forward(y.ln1, y.ln1_mean, y.ln1_rstd, a.x[l], W(kLn1W), W(kLn1B), N, C);
        ops_.layernorm_forward(y.ln2, y.ln2_mean, y.ln2_rstd, y.res2, W(kLn2W), W(kLn2B), N, C);
        ops_.gelu_forward(y.fch_gelu, y.fch, static_cast<size_t>(N) * 4 * C);
    }
    ops_.matmul_backward(a.dfch, G(kFcProjW), G(kFcProjB), a.dres, y.fch_gelu, W(kFcProjW), N, 4 * C, C);
    ops_.gelu_backward(a.dfch, y.fch, a.dfch, static_cast<size_t>(N) * 4 * C);
    ops_.matmul_backward(a.dbuf, G(kFcW), G(kFcB), a.dfch, y.ln2, W(kFcW), N, C, 4 * C);
    ops_.layernorm_backward(a.dres, G(kLn2W), G(kLn2B), a.dbuf, y.res2, W(kLn2W), y.ln2_mean, y.ln2_rstd, N, C);
    ops_.matmul_backward(a.dbuf, G(kAttProjW), G(kAttProjB), a.dres, y.atty, W(kAttProjW), N, C, C);
    ops_.attention_backward(opt_.attention, a.dqkv, a.dbuf, y.qkv, y.atty, y.att_stats, B_, T_, C, cfg_.n_head,
                            cfg_.n_head);
    ops_.matmul_backward(a.dbuf, G(kQkvW), G(kQkvB), a.dqkv, y.ln1, W(kQkvW), N, C, 3 * C);
    ops_.layernorm_backward(a.dres, G(kLn1W), G(kLn1B), a.dbuf, a.x[l], W(kLn1W), y.ln1_mean, y.ln1_rstd, N, C);
}

// Unit 0 (the embeddings) is used twice in each direction: wte embeds the tokens and is the
// tied LM head. Its hooks therefore run around both uses in forward; in backward it is
// opened at the head and closed only after the encoder's gradient lands.
float GPT::forward(const int32_t* inputs, const int32_t* targets, int B, int T, bool for_backward, float dloss_scale) {
    if (for_backward && !targets) throw Error("forward", "a pass for backward needs targets");
    ensure_activations(B, T);
    Activations& a = *act_;
    const int N = B * T, C = cfg_.n_embd, L = cfg_.n_layer;
    mem_.copy_to_device(a.inputs, inputs, static_cast<size_t>(N) * 4);
    if (targets) mem_.copy_to_device(a.targets, targets, static_cast<size_t>(N) * 4);

    hooks_->before_forward(0);
    ops_.encoder_forward(a.x[0], a.inputs, param(layout_.wte()), param(layout_.wpe()), B, T, C);
    hooks_->after_forward(0);
    for (int l = 0; l < L; l++) {
        hooks_->before_forward(1 + l);
        block_forward(l, true);
        hooks_->after_forward(1 + l);
    }
    hooks_->before_forward(L + 1);
    ops_.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, a.x[L], param(layout_.lnf_w()), param(layout_.lnf_b()), N, C);
    hooks_->after_forward(L + 1);
    hooks_->before_forward(0);
    ops_.matmul_forward(a.logits, nullptr, a.lnf, param(layout_.wte()), nullptr, N, C, cfg_.padded_vocab_size);
    hooks_->after_forward(0);

    backward_ready_ = false;
    if (!targets) return std::numeric_limits<float>::quiet_NaN();
    ops_.classifier_forward_backward(a.logits, a.losses, a.targets, N, cfg_.vocab_size, cfg_.padded_vocab_size,
                                     dloss_scale / static_cast<float>(N), for_backward);
    backward_ready_ = for_backward;
    token_losses_.resize(static_cast<size_t>(N));
    mem_.copy_to_host(token_losses_.data(), a.losses, static_cast<size_t>(N) * 4);
    double sum = 0;
    for (float v : token_losses_) sum += v;
    return static_cast<float>(sum / N);
}

void GPT::backward() {
    if (!backward_ready_) throw Error("backward", "backward() needs a preceding forward(..., for_backward = true)");
    backward_ready_ = false;
    Activations& a = *act_;
    const int N = B_ * T_, C = cfg_.n_embd, L = cfg_.n_layer;
    mem_.memset(a.dres, 0, static_cast<size_t>(N) * C * dtype_size(ops_.dtype()));

    hooks_->before_backward(0);
    ops_.matmul_backward(a.dbuf, grad(layout_.wte()), nullptr, a.logits, a.lnf, param(layout_.wte()), N, C,
                         cfg_.padded_vocab_size);
    hooks_->before_backward(L + 1);
    ops_.layernorm_backward(a.dres, grad(layout_.lnf_w()), grad(layout_.lnf_b()), a.dbuf, a.x[L],
                            param(layout_.lnf_w()), a.lnf_mean, a.lnf_rstd, N, C);
    hooks_->after_backward(L + 1);
    for (int l = L - 1; l >= 0; l--) {
        hooks_->before_backward(1 + l);
        block_backward(l);
        hooks_->after_backward(1 + l);
    }
    ops_.encoder_backward(grad(layout_.wte()), grad(layout_.wpe()), a.dres, a.inputs, B_, T_, C);
    hooks_->after_backward(0);
}

void GPT::set_track_attention_max(bool on) {
    if (on == track_attention_max_) return;
    track_attention_max_ = on;
    act_.reset();  // the row-max buffers come and go with the activations
}

std::vector<float> GPT::attention_max_logits() const {
    if (!track_attention_max_) throw Error("attention logits", "tracking is off (set_track_attention_max)");
    if (!act_) throw Error("attention logits", "no forward pass has run");
    const size_t n = static_cast<size_t>(B_) * cfg_.n_head * T_;
    std::vector<float> out, rows(n);
    for (const auto& y : act_->layers) {
        mem_.copy_to_host(rows.data(), y.att_row_max, n * 4);
        out.push_back(*std::max_element(rows.begin(), rows.end()));
    }
    return out;
}

std::vector<float> GPT::get_logits() const {
    if (!act_) throw Error("logits", "no forward pass has run");
    const size_t N = static_cast<size_t>(B_) * T_, V = cfg_.vocab_size, Vp = cfg_.padded_vocab_size;
    std::vector<float> all = download_f32(mem_, act_->logits, ops_.dtype(), N * Vp);
    std::vector<float> out(N * V);
    for (size_t n = 0; n < N; n++) std::copy(all.begin() + n * Vp, all.begin() + n * Vp + V, out.begin() + n * V);
    return out;
}

}  // namespace sixnd
