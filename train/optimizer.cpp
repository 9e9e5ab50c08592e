#include "train/optimizer.h"

#include <algorithm>

namespace sixnd {

AdamW::AdamW(Ops& ops, const ParamLayout& layout, size_t begin, size_t end, const OptimizerConfig& cfg,
             const void* params)
    : ops_(ops), cfg_(cfg), begin_(begin), end_(end) {
    for (const auto& t : layout.tensors()) {
        size_t lo = std::max(begin, t.offset), hi = std::min(end, t.offset + t.numel);
        if (lo < hi) pieces_.push_back({lo, hi - lo, t.decay()});
    }
    MemoryBackend& mem = ops.memory();
    const size_t n = end - begin;
    m_ = DeviceBuffer(&mem, n * 4, MemCategory::adam_m);
    v_ = DeviceBuffer(&mem, n * 4, MemCategory::adam_v);
    mem.memset(m_.get(), 0, n * 4);
    mem.memset(v_.get(), 0, n * 4);
    if (cfg.master_weights && ops.dtype() != DType::f32) {
        master_ = DeviceBuffer(&mem, n * 4, MemCategory::master);
        const char* p = static_cast<const char*>(params) + begin * dtype_size(ops.dtype());
        ops.cast(master_.get(), DType::f32, p, ops.dtype(), n);
    }
}

void AdamW::step(void* params, const void* grads, float lr, float grad_scale, int step) {
    const size_t es = dtype_size(ops_.dtype());
    for (const Piece& pc : pieces_) {
        AdamWArgs a;
        a.lr = lr;
        a.beta1 = cfg_.beta1;
        a.beta2 = cfg_.beta2;
        a.eps = cfg_.eps;
        a.weight_decay = pc.decay ? cfg_.weight_decay : 0.0f;
        a.step = step;
        a.grad_scale = grad_scale;
        const size_t local = pc.offset - begin_;
        ops_.adamw(static_cast<char*>(params) + pc.offset * es, master_ ? master_.as<float>() + local : nullptr,
                   static_cast<const char*>(grads) + pc.offset * es, m_.as<float>() + local, v_.as<float>() + local,
                   pc.count, a);
    }
}

}  // namespace sixnd
