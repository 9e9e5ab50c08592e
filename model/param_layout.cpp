#include "model/param_layout.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace sixnd {

ParamLayout::ParamLayout(const GPTConfig& cfg, size_t unit_align) {
    const int C = cfg.n_embd;
    size_t off = 0;
    auto add = [&](const std::string& name, std::vector<int> shape, int unit) {
        TensorInfo t;
        t.name = name;
        t.shape = std::move(shape);
        t.numel = 1;
        for (int d : t.shape) t.numel *= static_cast<size_t>(d);
        t.offset = off;
        t.unit = unit;
        off += t.numel;
        tensors_.push_back(std::move(t));
    };
    auto close_unit = [&](const std::string& name) {
        UnitInfo u;
        u.name = name;
        u.begin = units_.empty() ? 0 : units_.back().end;
        u.used = off - u.begin;
        off = (off + unit_align - 1) / unit_align * unit_align;
        u.end = off;
        units_.push_back(u);
    };

    const int QW = cfg.qkv_width(), H = cfg.hidden(), F = cfg.fc_width();
    const bool norm_bias = cfg.bias && cfg.norm == NormKind::layernorm;
    add("wte", {cfg.padded_vocab_size, C}, 0);
    if (cfg.pos == PosKind::learned) {
        wpe_ = static_cast<int>(tensors_.size());
        add("wpe", {cfg.max_seq_len, C}, 0);
    }
    if (!cfg.tie_embeddings) {
        head_ = static_cast<int>(tensors_.size());
        add("lm_head.weight", {cfg.padded_vocab_size, C}, 0);
    }
    close_unit("embeddings");
    block_.assign(static_cast<size_t>(cfg.n_layer) * kBlockTensors, -1);
    for (int l = 0; l < cfg.n_layer; l++) {
        const std::string h = "h." + std::to_string(l) + ".";
        const int u = 1 + l;
        auto put = [&](BlockTensor k, bool present, const std::string& name, std::vector<int> shape) {
            if (!present) return;
            block_[static_cast<size_t>(l) * kBlockTensors + k] = static_cast<int>(tensors_.size());
            add(h + name, std::move(shape), u);
        };
        put(kLn1W, true, "ln_1.weight", {C});
        put(kLn1B, norm_bias, "ln_1.bias", {C});
        put(kQkvW, true, "attn.c_attn.weight", {QW, C});
        put(kQkvB, cfg.bias, "attn.c_attn.bias", {QW});
        put(kAttProjW, true, "attn.c_proj.weight", {C, C});
        put(kAttProjB, cfg.bias, "attn.c_proj.bias", {C});
        put(kLn2W, true, "ln_2.weight", {C});
        put(kLn2B, norm_bias, "ln_2.bias", {C});
        put(kFcW, true, "mlp.c_fc.weight", {F, C});
        put(kFcB, cfg.bias, "mlp.c_fc.bias", {F});
        put(kFcProjW, true, "mlp.c_proj.weight", {C, H});
        put(kFcProjB, cfg.bias, "mlp.c_proj.bias", {C});
        close_unit("h." + std::to_string(l));
    }
    lnf_w_ = static_cast<int>(tensors_.size());
    add("ln_f.weight", {C}, cfg.n_layer + 1);
    if (norm_bias) {
        lnf_b_ = static_cast<int>(tensors_.size());
        add("ln_f.bias", {C}, cfg.n_layer + 1);
    }
    close_unit("ln_f");
    total_ = off;
}

const TensorInfo& ParamLayout::block_tensor(int layer, BlockTensor t) const {
    const TensorInfo* p = block(layer, t);
    if (!p) throw Error("h." + std::to_string(layer), "this model has no such block tensor (a knob removed it)");
    return *p;
}

const TensorInfo& ParamLayout::must(int i, const char* name) const {
    if (i < 0) throw Error(name, "this model has no such tensor (a knob removed it)");
    return tensors_[i];
}

size_t ParamLayout::num_params() const {
    size_t n = 0;
    for (const auto& t : tensors_) n += t.numel;
    return n;
}

const TensorInfo& ParamLayout::find(const std::string& name) const {
    for (const auto& t : tensors_)
        if (t.name == name) return t;
    throw Error(name, "no such parameter tensor");
}

void relayout_range(const ParamLayout& from, const ParamLayout& to, size_t from_begin, size_t count, const void* src,
                    void* dst_full, size_t es) {
    const auto& ft = from.tensors();
    const auto& tt = to.tensors();
    for (size_t i = 0; i < ft.size(); i++) {
        size_t lo = std::max(from_begin, ft[i].offset), hi = std::min(from_begin + count, ft[i].offset + ft[i].numel);
        if (lo >= hi) continue;
        std::memcpy(static_cast<char*>(dst_full) + (tt[i].offset + lo - ft[i].offset) * es,
                    static_cast<const char*>(src) + (lo - from_begin) * es, (hi - lo) * es);
    }
}

}  // namespace sixnd
