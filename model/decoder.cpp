#include "model/decoder.h"

#include "core/error.h"
#include "core/transfer.h"

namespace sixnd {

Decoder::Decoder(GPT& model, int max_len) : m_(model), S_(max_len) {
    const GPTConfig& c = model.config();
    if (max_len <= 0 || max_len > c.max_seq_len)
        throw Error("decoder", "cache length " + std::to_string(max_len) + " must be in [1, " + std::to_string(c.max_seq_len) + "]");
    MemoryBackend& mem = model.ops().memory();
    const size_t es = dtype_size(model.ops().dtype()), C = c.n_embd, QW = c.qkv_width();
    auto alloc = [&](size_t bytes) {
        bufs_.emplace_back(&mem, bytes, MemCategory::activations);
        return bufs_.back().get();
    };
    for (int l = 0; l < c.n_layer; l++) cache_.push_back(alloc(size_t(S_) * QW * es));
    if (c.qk_norm) qkv_row_ = alloc(QW * es);
    x_ = alloc(C * es);
    ln_ = alloc(C * es);
    atty_ = alloc(C * es);
    proj_ = alloc(C * es);
    res2_ = alloc(C * es);
    fch_ = alloc(size_t(c.fc_width()) * es);
    fch_act_ = alloc(size_t(c.hidden()) * es);
    logits_ = alloc(size_t(c.padded_vocab_size) * es);
    mean_ = static_cast<float*>(alloc(4));
    rstd_ = static_cast<float*>(alloc(4));
    qk_rstd_ = static_cast<float*>(alloc(size_t(c.n_head + c.kv_heads()) * 4));
    tok_ = static_cast<int32_t*>(alloc(4));
}

void Decoder::norm(void* out, const void* inp, const TensorInfo& w, const TensorInfo* b) {
    const GPTConfig& c = m_.config();
    if (c.norm == NormKind::layernorm)
        m_.ops().layernorm_forward(out, mean_, rstd_, inp, m_.param(w), m_.param(b), 1, c.n_embd);
    else
        m_.ops().rmsnorm_forward(out, rstd_, inp, m_.param(w), 1, c.n_embd);
}

std::vector<float> Decoder::step(int token) {
    const GPTConfig& c = m_.config();
    if (pos_ >= S_) throw Error("decoder", "the KV cache is full (" + std::to_string(S_) + " positions)");
    if (token < 0 || token >= c.vocab_size) throw Error("decoder", "token " + std::to_string(token) + " is outside the vocabulary");
    Ops& ops = m_.ops();
    MemoryBackend& mem = ops.memory();
    const ParamLayout& L = m_.layout();
    const int C = c.n_embd, QW = c.qkv_width(), H = c.hidden(), NH = c.n_head, NKV = c.kv_heads();
    const size_t es = dtype_size(ops.dtype());
    const int32_t t32 = token;
    mem.copy_to_device(tok_, &t32, 4);
    // The position embedding of row pos_ is selected by offsetting wpe, so the encoder sees T = 1.
    const char* wpe_row =
        L.pos_emb() ? static_cast<const char*>(m_.param(L.wpe())) + size_t(pos_) * C * es : nullptr;
    ops.encoder_forward(x_, tok_, m_.param(L.wte()), wpe_row, 1, 1, C);
    for (int l = 0; l < c.n_layer; l++) {
        auto T = [&](BlockTensor t) { return L.block(l, t); };
        auto W = [&](BlockTensor t) { return m_.param(T(t)); };
        char* row = static_cast<char*>(cache_[l]) + size_t(pos_) * QW * es;
        norm(ln_, x_, *T(kLn1W), T(kLn1B));
        if (c.qk_norm) {
            ops.matmul_forward(qkv_row_, nullptr, ln_, W(kQkvW), W(kQkvB), 1, C, QW);
            ops.qk_norm_forward(row, qk_rstd_, qkv_row_, 1, C, NH, NKV);
        } else {
            ops.matmul_forward(row, nullptr, ln_, W(kQkvW), W(kQkvB), 1, C, QW);
        }
        if (c.pos == PosKind::rope) ops.rope_forward(row, 1, 1, C, NH, NKV, c.rope_theta, pos_);
        ops.attention_decode(atty_, cache_[l], 1, S_, pos_, C, NH, NKV);
        ops.matmul_forward(proj_, nullptr, atty_, W(kAttProjW), W(kAttProjB), 1, C, C);
        ops.residual_forward(res2_, x_, proj_, C);
        norm(ln_, res2_, *T(kLn2W), T(kLn2B));
        if (c.mlp == MlpKind::gelu) {
            ops.matmul_forward(fch_act_, fch_, ln_, W(kFcW), W(kFcB), 1, C, H);
        } else {
            ops.matmul_forward(fch_, nullptr, ln_, W(kFcW), W(kFcB), 1, C, c.fc_width());
            if (c.mlp == MlpKind::relu2)
                ops.relu2_forward(fch_act_, fch_, H);
            else
                ops.swiglu_forward(fch_act_, fch_, 1, H);
        }
        ops.matmul_forward(proj_, nullptr, fch_act_, W(kFcProjW), W(kFcProjB), 1, H, C);
        ops.residual_forward(x_, res2_, proj_, C);
    }
    norm(ln_, x_, L.lnf_w(), L.lnf_bias());
    ops.matmul_forward(logits_, nullptr, ln_, m_.param(L.head()), nullptr, 1, C, c.padded_vocab_size);
    pos_++;
    std::vector<float> out = download_f32(mem, logits_, ops.dtype(), c.padded_vocab_size);
    out.resize(c.vocab_size);
    return out;
}

}  // namespace sixnd
