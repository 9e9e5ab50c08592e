#include "train/muon.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sixnd {

bool Muon::updates(const TensorInfo& t, const ParamLayout& layout) {
    return layout.hidden_matrix(t);
}

Muon::Muon(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
           const Locate& params, Comm& comm, float peak_lr)
    : AdamW(ops, layout, std::move(spans), cfg, params, [&layout](const TensorInfo& t) { return !updates(t, layout); }),
      comm_(comm),
      lr_ratio_(cfg.muon_lr / peak_lr) {
    const size_t W = comm.size(), r = comm.rank();
    size_t max_unit = 0, max_work = 0;
    for (size_t u = 0; u < layout.units().size(); u++) {
        const UnitInfo& unit = layout.units()[u];
        std::vector<const TensorInfo*> mats;
        for (const auto& t : layout.tensors())
            if (t.unit == static_cast<int>(u) && updates(t, layout)) mats.push_back(&t);
        if (mats.empty()) continue;
        UnitWork w{unit.begin, 0, 0, false, {}, {}};
        size_t lo = unit.end, hi = unit.begin;  // this rank's part of the unit, from its spans
        for (size_t i = 0; i < spans_.size(); i++) {
            const ShardSpan& s = spans_[i];
            const size_t a = std::max(s.flat_begin, unit.begin), b = std::min(s.flat_begin + s.count, unit.end);
            if (a >= b) continue;
            lo = std::min(lo, a);
            hi = std::max(hi, b);
            for (const TensorInfo* t : mats) {
                const size_t ta = std::max(a, t->offset), tb = std::min(b, t->offset + t->numel);
                if (ta >= tb) continue;
                const float scale = std::sqrt(std::max(1.0f, static_cast<float>(t->shape[0]) / static_cast<float>(t->shape[1])));
                w.slices.push_back({i, ta, tb - ta, scale});
            }
        }
        if (lo >= hi) lo = hi = unit.begin;
        w.mine = lo - unit.begin;
        w.count = hi - lo;
        // The in-place all-gather needs the ZeRO cut: rank r holds the r-th of W equal slices.
        w.gather = w.count != unit.size();
        if (w.gather && (unit.size() % W != 0 || w.count != unit.size() / W || w.mine != r * w.count))
            throw Error("Muon", "unit " + unit.name + " is not cut into equal per-rank slices");
        for (const TensorInfo* t : mats) {
            if (t->offset >= hi || t->offset + t->numel <= lo) continue;
            const int rows = t->shape[0], cols = t->shape[1];
            w.matrices.push_back({t->offset - unit.begin, rows, cols});
            max_work = std::max(max_work, Ops::newton_schulz_floats(rows, cols));
            const double sd = std::min(rows, cols), ld = std::max(rows, cols);
            ns_flops_ += kNsSteps * (4 * sd * sd * ld + 2 * sd * sd * sd);
        }
        max_unit = std::max(max_unit, unit.size());
        units_.push_back(std::move(w));
    }
    MemoryBackend& mem = ops.memory();
    dir_ = DeviceBuffer(&mem, max_unit * 4, MemCategory::workspace);
    work_ = DeviceBuffer(&mem, max_work * 4, MemCategory::workspace);
    // Directions are written only for Muon matrices; the rest of a unit gathers as zeros.
    if (max_unit) mem.memset(dir_.get(), 0, max_unit * 4);
}

void Muon::step(const Locate& params, const Locate& grads, float lr, float grad_scale, int step) {
    AdamW::step(params, grads, lr, grad_scale, step);
    const float muon_lr = lr * lr_ratio_;
    const size_t es = dtype_size(ops_.dtype());
    float* dir = dir_.as<float>();
    for (const UnitWork& w : units_) {
        for (const Slice& sl : w.slices) {
            const ShardSpan& s = spans_[sl.span];
            const size_t in_span = sl.flat - s.flat_begin;
            ops_.muon_momentum(dir + (sl.flat - w.begin), m_.as<float>() + s.local + in_span,
                               static_cast<const char*>(grads(s)) + in_span * es, sl.count, cfg_.muon_momentum, grad_scale);
        }
        if (w.gather) comm_.all_gather(dir, dir + w.mine, w.count, DType::f32);
        for (const Matrix& mx : w.matrices) ops_.newton_schulz(dir + mx.at, work_.as<float>(), mx.rows, mx.cols, kNsSteps);
        for (const Slice& sl : w.slices) {
            const ShardSpan& s = spans_[sl.span];
            const size_t in_span = sl.flat - s.flat_begin;
            ops_.muon_apply(static_cast<char*>(params(s)) + in_span * es, master_ ? master_.as<float>() + s.local + in_span : nullptr,
                            dir + (sl.flat - w.begin), sl.count, muon_lr, sl.scale, cfg_.muon_weight_decay);
        }
    }
}

std::unique_ptr<AdamW> make_optimizer(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans,
                                      const OptimizerConfig& cfg, const AdamW::Locate& params, Comm& comm,
                                      float peak_lr) {
    if (cfg.kind == OptimizerKind::muon)
        return std::make_unique<Muon>(ops, layout, std::move(spans), cfg, params, comm, peak_lr);
    return std::make_unique<AdamW>(ops, layout, std::move(spans), cfg, params);
}

}  // namespace sixnd
