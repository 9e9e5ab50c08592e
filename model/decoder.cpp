#include "model/decoder.h"

#include "core/error.h"
#include "core/transfer.h"

namespace sixnd {

Decoder::Decoder(GPT& model, int max_len) : m_(model), S_(max_len) {
    const GPTConfig& c = model.config();
    if (max_len <= 0 || max_len > c.max_seq_len)
        throw Error("decoder", "cache length " + std::to_string(max_len) + " must be in [1, " + std::to_string(c.max_seq_len) + "]");
    MemoryBackend& mem = model.ops().memory();
    const size_t es = dtype_size(model.ops().dtype()), C = c.n_embd;
    auto alloc = [&](size_t bytes) {
        bufs_.emplace_back(&mem, bytes, MemCategory::activations);
        return bufs_.back().get();
    };
    for (int l = 0; l < c.n_layer; l++) cache_.push_back(alloc(size_t(S_) * 3 * C * es));
    x_ = alloc(C * es);
    ln_ = alloc(C * es);
    atty_ = alloc(C * es);
    proj_ = alloc(C * es);
    res2_ = alloc(C * es);
    fch_ = alloc(4 * C * es);
    fch_gelu_ = alloc(4 * C * es);
    logits_ = alloc(size_t(c.padded_vocab_size) * es);
    mean_ = static_cast<float*>(alloc(4));
    rstd_ = static_cast<float*>(alloc(4));
    tok_ = static_cast<int32_t*>(alloc(4));
}

std::vector<float> Decoder::step(int token) {
    const GPTConfig& c = m_.config();
    if (pos_ >= S_) throw Error("decoder", "the KV cache is full (" + std::to_string(S_) + " positions)");
    if (token < 0 || token >= c.vocab_size) throw Error("decoder", "token " + std::to_string(token) + " is outside the vocabulary");
    Ops& ops = m_.ops();
    MemoryBackend& mem = ops.memory();
    const ParamLayout& L = m_.layout();
    const int C = c.n_embd;
    const size_t es = dtype_size(ops.dtype());
    const int32_t t32 = token;
    mem.copy_to_device(tok_, &t32, 4);
    // The position embedding of row pos_ is selected by offsetting wpe, so the encoder sees T = 1.
    const char* wpe_row = static_cast<const char*>(m_.param(L.wpe())) + size_t(pos_) * C * es;
    ops.encoder_forward(x_, tok_, m_.param(L.wte()), wpe_row, 1, 1, C);
    for (int l = 0; l < c.n_layer; l++) {
        auto W = [&](BlockTensor t) { return m_.param(L.block_tensor(l, t)); };
        char* row = static_cast<char*>(cache_[l]) + size_t(pos_) * 3 * C * es;
        ops.layernorm_forward(ln_, mean_, rstd_, x_, W(kLn1W), W(kLn1B), 1, C);
        ops.matmul_forward(row, nullptr, ln_, W(kQkvW), W(kQkvB), 1, C, 3 * C);
        ops.attention_decode(atty_, cache_[l], 1, S_, pos_, C, c.n_head, c.n_head);
        ops.matmul_forward(proj_, nullptr, atty_, W(kAttProjW), W(kAttProjB), 1, C, C);
        ops.residual_layernorm_forward(res2_, ln_, mean_, rstd_, x_, proj_, W(kLn2W), W(kLn2B), 1, C);
        ops.matmul_forward(fch_gelu_, fch_, ln_, W(kFcW), W(kFcB), 1, C, 4 * C);
        ops.matmul_forward(proj_, nullptr, fch_gelu_, W(kFcProjW), W(kFcProjB), 1, 4 * C, C);
        ops.residual_forward(x_, res2_, proj_, C);
    }
    ops.layernorm_forward(ln_, mean_, rstd_, x_, m_.param(L.lnf_w()), m_.param(L.lnf_b()), 1, C);
    ops.matmul_forward(logits_, nullptr, ln_, m_.param(L.wte()), nullptr, 1, C, c.padded_vocab_size);
    pos_++;
    std::vector<float> out = download_f32(mem, logits_, ops.dtype(), c.padded_vocab_size);
    out.resize(c.vocab_size);
    return out;
}

}  // namespace sixnd
