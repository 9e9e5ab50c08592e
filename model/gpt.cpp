#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/transfer.h"

namespace sixnd {

// Activation memory for one (B, T). Which tensors each layer owns and which it shares with the
// other layers is the recompute policy: a shared tensor is rebuilt in backward before use.
// Knob buffers exist only when their knob is on (null otherwise).
struct GPT::Activations {
    struct Layer {
        void* ln1;
        float* ln1_mean;  // layernorm only
        float* ln1_rstd;
        void* qkv;        // [N, QW]: c_attn output (rope'd in place when there is no qk-norm)
        void* qkvn;       // [N, QW]: qk-normalised (and rope'd) qkv, the attention input (qk-norm)
        float* qk_rstd;   // [N, NH+NKV] (qk-norm)
        void* atty;
        float* att_stats;
        void* res2;
        void* ln2;
        float* ln2_mean;
        float* ln2_rstd;
        void* fch;       // [N, fc_width]: pre-activation
        void* fch_act;   // [N, H]: post-activation
        float* att_row_max;  // [B,NH,T] when tracking, else null
        void* att_in() const { return qkvn ? qkvn : qkv; }
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
    void* dfch = nullptr;  // [N, fc_width]
    void* dact = nullptr;  // [N, H]: the MLP activation's output gradient (== dfch unless swiglu)
    void* dqkv = nullptr;
    void* dqkv_raw = nullptr;  // [N, QW]: gradient at the pre-qk-norm qkv (qk-norm; else == dqkv)
};

namespace {
// The layout divides by the head count: a config is checked before the layout is cut from it.
const GPTConfig& validated(const GPTConfig& c) {
    c.validate("model config");
    return c;
}
}  // namespace

GPT::GPT(const GPTConfig& cfg, Ops& ops, const ModelOptions& opt)
    : cfg_(validated(cfg)), ops_(ops), mem_(ops.memory()), opt_(opt), layout_(cfg, opt.unit_align) {
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

void* GPT::param(const TensorInfo* t) const { return t ? param(*t) : nullptr; }
void* GPT::grad(const TensorInfo* t) const { return t ? grad(*t) : nullptr; }

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
    cfg_.require_seq_len(T);
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
    const size_t QW = cfg_.qkv_width(), H = cfg_.hidden(), Fw = cfg_.fc_width();
    const bool ln = cfg_.norm == NormKind::layernorm, qkn = cfg_.qk_norm;
    // A layer's tensors; those already set in `shared` are reused instead of allocated.
    auto make_layer = [&](const Activations::Layer& shared) {
        Activations::Layer y{};
        y.ln1 = shared.ln1 ? shared.ln1 : X(N * C);
        y.ln1_mean = ln ? F(N) : nullptr;
        y.ln1_rstd = F(N);
        y.qkv = X(N * QW);
        y.qkvn = !qkn ? nullptr : shared.qkvn ? shared.qkvn : X(N * QW);
        y.qk_rstd = qkn ? F(N * (cfg_.n_head + cfg_.kv_heads())) : nullptr;
        y.atty = X(N * C);
        y.att_stats = F(stats);
        y.res2 = X(N * C);
        y.ln2 = shared.ln2 ? shared.ln2 : X(N * C);
        y.ln2_mean = ln ? F(N) : nullptr;
        y.ln2_rstd = F(N);
        y.fch = X(N * Fw);
        y.fch_act = shared.fch_act ? shared.fch_act : X(N * H);
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
            shared.fch_act = X(N * H);
            if (qkn) shared.qkvn = X(N * QW);
        }
        for (size_t l = 0; l < L; l++) a->layers.push_back(make_layer(shared));
    }
    if (track_attention_max_)
        for (auto& y : a->layers) y.att_row_max = F(N * cfg_.n_head);
    a->proj = X(N * C);
    a->lnf = X(N * C);
    a->lnf_mean = ln ? F(N) : nullptr;
    a->lnf_rstd = F(N);
    a->logits = X(N * cfg_.padded_vocab_size);
    a->losses = F(N);
    a->dres = X(N * C, MemCategory::workspace);
    a->dbuf = X(N * C, MemCategory::workspace);
    a->dfch = X(N * Fw, MemCategory::workspace);
    a->dact = cfg_.mlp == MlpKind::swiglu ? X(N * H, MemCategory::workspace) : a->dfch;
    a->dqkv = X(N * QW, MemCategory::workspace);
    a->dqkv_raw = qkn ? X(N * QW, MemCategory::workspace) : a->dqkv;
    act_ = std::move(a);
    B_ = B;
    T_ = T;
}

void GPT::norm_forward(void* out, float* mean, float* rstd, const void* inp, const TensorInfo& w, const TensorInfo* b,
                       int N) {
    if (cfg_.norm == NormKind::layernorm)
        ops_.layernorm_forward(out, mean, rstd, inp, param(w), param(b), N, cfg_.n_embd);
    else
        ops_.rmsnorm_forward(out, rstd, inp, param(w), N, cfg_.n_embd);
}

void GPT::norm_backward(void* dinp, const void* dout, const void* inp, const TensorInfo& w, const TensorInfo* b,
                        const float* mean, const float* rstd, int N) {
    if (cfg_.norm == NormKind::layernorm)
        ops_.layernorm_backward(dinp, grad(w), grad(b), dout, inp, param(w), mean, rstd, N, cfg_.n_embd);
    else
        ops_.rmsnorm_backward(dinp, grad(w), dout, inp, param(w), rstd, N, cfg_.n_embd);
}

// The attention input from the c_attn output: qk-norm into qkvn, then rope in place.
void GPT::attention_input(int l) {
    Activations::Layer& y = act_->layers[l];
    const int C = cfg_.n_embd, NH = cfg_.n_head, NKV = cfg_.kv_heads();
    if (cfg_.qk_norm) ops_.qk_norm_forward(y.qkvn, y.qk_rstd, y.qkv, B_ * T_, C, NH, NKV);
    if (cfg_.pos == PosKind::rope) ops_.rope_forward(y.att_in(), B_, T_, C, NH, NKV, cfg_.rope_theta, 0);
}

void GPT::mlp_activation(int l) {
    const Activations::Layer& y = act_->layers[l];
    const size_t N = static_cast<size_t>(B_) * T_;
    if (cfg_.mlp == MlpKind::gelu)
        ops_.gelu_forward(y.fch_act, y.fch, N * cfg_.hidden());
    else if (cfg_.mlp == MlpKind::relu2)
        ops_.relu2_forward(y.fch_act, y.fch, N * cfg_.hidden());
    else
        ops_.swiglu_forward(y.fch_act, y.fch, B_ * T_, cfg_.hidden());
}

void GPT::block_forward(int l, bool keep_output) {
    Activations& a = *act_;
    Activations::Layer& y = a.layers[l];
    const int N = B_ * T_, C = cfg_.n_embd, H = cfg_.hidden(), QW = cfg_.qkv_width();
    auto T = [&](BlockTensor t) { return layout_.block(l, t); };
    auto W = [&](BlockTensor t) { return param(T(t)); };
    norm_forward(y.ln1, y.ln1_mean, y.ln1_rstd, a.x[l], *T(kLn1W), T(kLn1B), N);
    ops_.matmul_forward(y.qkv, nullptr, y.ln1, W(kQkvW), W(kQkvB), N, C, QW);
    attention_input(l);
    ops_.attention_forward(opt_.attention, y.atty, y.att_stats, y.att_row_max, y.att_in(), B_, T_, C, cfg_.n_head,
                           cfg_.kv_heads());
    ops_.matmul_forward(a.proj, nullptr, y.atty, W(kAttProjW), W(kAttProjB), N, C, C);
    if (cfg_.norm == NormKind::layernorm) {
        ops_.residual_layernorm_forward(y.res2, y.ln2, y.ln2_mean, y.ln2_rstd, a.x[l], a.proj, W(kLn2W), W(kLn2B), N,
                                        C);
    } else {
        ops_.residual_forward(y.res2, a.x[l], a.proj, static_cast<size_t>(N) * C);
        norm_forward(y.ln2, y.ln2_mean, y.ln2_rstd, y.res2, *T(kLn2W), T(kLn2B), N);
    }
    if (cfg_.mlp == MlpKind::gelu) {
        ops_.matmul_forward(y.fch_act, y.fch, y.ln2, W(kFcW), W(kFcB), N, C, H);  // GELU epilogue
    } else {
        ops_.matmul_forward(y.fch, nullptr, y.ln2, W(kFcW), W(kFcB), N, C, cfg_.fc_width());
        mlp_activation(l);
    }
    if (!keep_output) return;
    ops_.matmul_forward(a.proj, nullptr, y.fch_act, W(kFcProjW), W(kFcProjB), N, H, C);
    ops_.residual_forward(a.x[l + 1], y.res2, a.proj, static_cast<size_t>(N) * C);
}

// On entry a.dres holds dL/dx_{l+1}; on exit dL/dx_l.
void GPT::block_backward(int l) {
    Activations& a = *act_;
    Activations::Layer& y = a.layers[l];
    const int N = B_ * T_, C = cfg_.n_embd, H = cfg_.hidden(), QW = cfg_.qkv_width();
    const int NH = cfg_.n_head, NKV = cfg_.kv_heads();
    auto T = [&](BlockTensor t) { return layout_.block(l, t); };
    auto W = [&](BlockTensor t) { return param(T(t)); };
    auto G = [&](BlockTensor t) { return grad(T(t)); };
    if (opt_.recompute == Recompute::full) {
        block_forward(l, false);
    } else if (opt_.recompute == Recompute::selective) {
        norm_forward(y.ln1, y.ln1_mean, y.ln1_rstd, a.x[l], *T(kLn1W), T(kLn1B), N);
        if (cfg_.qk_norm) attention_input(l);
        norm_forward(y.ln2, y.ln2_mean, y.ln2_rstd, y.res2, *T(kLn2W), T(kLn2B), N);
        mlp_activation(l);
    }
    const size_t NHd = static_cast<size_t>(N) * H;
    ops_.matmul_backward(a.dact, G(kFcProjW), G(kFcProjB), a.dres, y.fch_act, W(kFcProjW), N, H, C);
    if (cfg_.mlp == MlpKind::gelu)
        ops_.gelu_backward(a.dfch, y.fch, a.dact, NHd);
    else if (cfg_.mlp == MlpKind::relu2)
        ops_.relu2_backward(a.dfch, y.fch, a.dact, NHd);
    else
        ops_.swiglu_backward(a.dfch, y.fch, a.dact, N, H);
    ops_.matmul_backward(a.dbuf, G(kFcW), G(kFcB), a.dfch, y.ln2, W(kFcW), N, C, cfg_.fc_width());
    norm_backward(a.dres, a.dbuf, y.res2, *T(kLn2W), T(kLn2B), y.ln2_mean, y.ln2_rstd, N);
    ops_.matmul_backward(a.dbuf, G(kAttProjW), G(kAttProjB), a.dres, y.atty, W(kAttProjW), N, C, C);
    ops_.attention_backward(opt_.attention, a.dqkv, a.dbuf, y.att_in(), y.atty, y.att_stats, B_, T_, C, NH, NKV);
    if (cfg_.pos == PosKind::rope) ops_.rope_backward(a.dqkv, B_, T_, C, NH, NKV, cfg_.rope_theta);
    if (cfg_.qk_norm) ops_.qk_norm_backward(a.dqkv_raw, a.dqkv, y.qkv, y.qk_rstd, N, C, NH, NKV);
    ops_.matmul_backward(a.dbuf, G(kQkvW), G(kQkvB), a.dqkv_raw, y.ln1, W(kQkvW), N, C, QW);
    norm_backward(a.dres, a.dbuf, a.x[l], *T(kLn1W), T(kLn1B), y.ln1_mean, y.ln1_rstd, N);
}

// Unit 0 (the embeddings) is used twice in each direction: wte embeds the tokens, and the LM
// head is wte (tied) or lm_head.weight, which lives in the same unit (untied). Its hooks
// therefore run around both uses in forward; in backward it is opened at the head and closed
// only after the encoder's gradient lands.
float GPT::forward(const int32_t* inputs, const int32_t* targets, int B, int T, bool for_backward, float dloss_scale) {
    if (for_backward && !targets) throw Error("forward", "a pass for backward needs targets");
    ensure_activations(B, T);
    Activations& a = *act_;
    const int N = B * T, C = cfg_.n_embd, L = cfg_.n_layer;
    mem_.copy_to_device(a.inputs, inputs, static_cast<size_t>(N) * 4);
    if (targets) mem_.copy_to_device(a.targets, targets, static_cast<size_t>(N) * 4);

    hooks_->before_forward(0);
    ops_.encoder_forward(a.x[0], a.inputs, param(layout_.wte()), param(layout_.pos_emb()), B, T, C);
    hooks_->after_forward(0);
    for (int l = 0; l < L; l++) {
        hooks_->before_forward(1 + l);
        block_forward(l, true);
        hooks_->after_forward(1 + l);
    }
    hooks_->before_forward(L + 1);
    norm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, a.x[L], layout_.lnf_w(), layout_.lnf_bias(), N);
    hooks_->after_forward(L + 1);
    hooks_->before_forward(0);
    ops_.matmul_forward(a.logits, nullptr, a.lnf, param(layout_.head()), nullptr, N, C, cfg_.padded_vocab_size);
    hooks_->after_forward(0);

    backward_ready_ = false;
    logits_are_grads_ = false;
    if (!targets) return std::numeric_limits<float>::quiet_NaN();
    ops_.classifier_forward_backward(a.logits, a.losses, a.targets, N, cfg_.vocab_size, cfg_.padded_vocab_size,
                                     dloss_scale / static_cast<float>(N), for_backward);
    backward_ready_ = for_backward;
    logits_are_grads_ = for_backward;
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
    ops_.matmul_backward(a.dbuf, grad(layout_.head()), nullptr, a.logits, a.lnf, param(layout_.head()), N, C,
                         cfg_.padded_vocab_size);
    hooks_->before_backward(L + 1);
    norm_backward(a.dres, a.dbuf, a.x[L], layout_.lnf_w(), layout_.lnf_bias(), a.lnf_mean, a.lnf_rstd, N);
    hooks_->after_backward(L + 1);
    for (int l = L - 1; l >= 0; l--) {
        hooks_->before_backward(1 + l);
        block_backward(l);
        hooks_->after_backward(1 + l);
    }
    ops_.encoder_backward(grad(layout_.wte()), grad(layout_.pos_emb()), a.dres, a.inputs, B_, T_, C);
    hooks_->after_backward(0);
}

void GPT::set_track_attention_max(bool on) {
    if (on == track_attention_max_) return;
    track_attention_max_ = on;
    act_.reset();  // the row-max buffers come and go with the activations
    backward_ready_ = false;  // and a pending backward with them
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
    if (logits_are_grads_)
        throw Error("logits", "the last forward was for backward and left dlogits in their place; read logits after a "
                              "forward without for_backward");
    const size_t N = static_cast<size_t>(B_) * T_, V = cfg_.vocab_size, Vp = cfg_.padded_vocab_size;
    std::vector<float> all = download_f32(mem_, act_->logits, ops_.dtype(), N * Vp);
    std::vector<float> out(N * V);
    for (size_t n = 0; n < N; n++) std::copy(all.begin() + n * Vp, all.begin() + n * Vp + V, out.begin() + n * V);
    return out;
}

}  // namespace sixnd
