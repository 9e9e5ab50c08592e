#include "train/optimizer.h"

#include <algorithm>

#include "core/error.h"

namespace sixnd {

std::vector<ShardSpan> whole_buffer(size_t total) { return {ShardSpan{0, 0, total, 0}}; }

OptimizerKind parse_optimizer(const std::string& s) {
    if (s == "adamw") return OptimizerKind::adamw;
    if (s == "muon") return OptimizerKind::muon;
    throw Error("--optimizer", "must be adamw or muon, got '" + s + "'");
}

const char* optimizer_name(OptimizerKind k) { return k == OptimizerKind::muon ? "muon" : "adamw"; }

AdamW::AdamW(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
             const Locate& params)
    : AdamW(ops, layout, std::move(spans), cfg, params, [](const TensorInfo&) { return true; }) {}

AdamW::AdamW(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
             const Locate& params, const std::function<bool(const TensorInfo&)>& updates)
    : ops_(ops), cfg_(cfg), spans_(std::move(spans)) {
    for (size_t i = 0; i < spans_.size(); i++) {
        const ShardSpan& s = spans_[i];
        size_ = std::max(size_, s.local + s.count);
        for (const auto& t : layout.tensors()) {
            size_t lo = std::max(s.flat_begin, t.offset), hi = std::min(s.flat_begin + s.count, t.offset + t.numel);
            if (lo < hi && updates(t)) pieces_.push_back({i, lo - s.flat_begin, hi - lo, t.decay()});
        }
    }
    MemoryBackend& mem = ops.memory();
    m_ = DeviceBuffer(&mem, size_ * 4, MemCategory::adam_m);
    v_ = DeviceBuffer(&mem, size_ * 4, MemCategory::adam_v);
    mem.memset(m_.get(), 0, size_ * 4);
    mem.memset(v_.get(), 0, size_ * 4);
    if (cfg.master_weights && ops.dtype() != DType::f32) {
        master_ = DeviceBuffer(&mem, size_ * 4, MemCategory::master);
        for (const ShardSpan& s : spans_) ops.cast(master_.as<float>() + s.local, DType::f32, params(s), ops.dtype(), s.count);
    }
}

void AdamW::step(const Locate& params, const Locate& grads, float lr, float grad_scale, int step) {
    const size_t es = dtype_size(ops_.dtype());
    for (const Piece& pc : pieces_) {
        const ShardSpan& s = spans_[pc.span];
        AdamWArgs a;
        a.lr = lr;
        a.beta1 = cfg_.beta1;
        a.beta2 = cfg_.beta2;
        a.eps = cfg_.eps;
        a.weight_decay = pc.decay ? cfg_.weight_decay : 0.0f;
        a.step = step;
        a.grad_scale = grad_scale;
        const size_t local = s.local + pc.offset;
        ops_.adamw(static_cast<char*>(params(s)) + pc.offset * es, master_ ? master_.as<float>() + local : nullptr,
                   static_cast<const char*>(grads(s)) + pc.offset * es, m_.as<float>() + local, v_.as<float>() + local,
                   pc.count, a);
    }
}

}  // namespace sixnd
