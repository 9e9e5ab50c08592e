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

    add("wte", {cfg.padded_vocab_size, C}, 0);
    add("wpe", {cfg.max_seq_len, C}, 0);
    close_unit("embeddings");
    for (int l = 0; l < cfg.n_layer; l++) {
        const std::string h = "h." + std::to_string(l) + ".";
        const int u = 1 + l;
        add(h + "ln_1.weight", {C}, u);
        add(h + "ln_1.bias", {C}, u);
        add(h + "attn.c_attn.weight", {3 * C, C}, u);
        add(h + "attn.c_attn.bias", {3 * C}, u);
        add(h + "attn.c_proj.weight", {C, C}, u);
        add(h + "attn.c_proj.bias", {C}, u);
        add(h + "ln_2.weight", {C}, u);
        add(h + "ln_2.bias", {C}, u);
        add(h + "mlp.c_fc.weight", {4 * C, C}, u);
        add(h + "mlp.c_fc.bias", {4 * C}, u);
        add(h + "mlp.c_proj.weight", {C, 4 * C}, u);
        add(h + "mlp.c_proj.bias", {C}, u);
        close_unit("h." + std::to_string(l));
    }
    add("ln_f.weight", {C}, cfg.n_layer + 1);
    add("ln_f.bias", {C}, cfg.n_layer + 1);
    close_unit("ln_f");
    total_ = off;
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
