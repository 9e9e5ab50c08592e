#include "train/muon.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sixnd {

bool Muon::updates(const TensorInfo& t, const ParamLayout& layout) {
    return layout.hidden_matrix(t);
}

std::vector<plan::MuonUnit> Muon::matrices_by_unit(const ParamLayout& layout) {
    // One pass over the tensors (a scan of all of them per unit was quadratic in the layers:
    // minutes for a plan of a very deep model).
    std::vector<plan::MuonUnit> by_unit(layout.units().size());
    for (size_t u = 0; u < by_unit.size(); u++)
        by_unit[u] = {static_cast<int>(u), layout.units()[u].begin, layout.units()[u].end, {}};
    for (const auto& t : layout.tensors())
        if (updates(t, layout)) by_unit.at(static_cast<size_t>(t.unit)).matrices.push_back({t.offset, t.numel, t.shape[0], t.shape[1]});
    std::vector<plan::MuonUnit> out;
    for (plan::MuonUnit& mu : by_unit)
        if (!mu.matrices.empty()) out.push_back(std::move(mu));
    return out;
}

Muon::Muon(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
           const Locate& params, Comm& comm, float peak_lr)
    : AdamW(ops, layout, std::move(spans), cfg, params, [&layout](const TensorInfo& t) { return !updates(t, layout); }),
      comm_(comm),
      lr_ratio_(static_cast<double>(cfg.muon_lr) / peak_lr) {
    const size_t W = comm.size(), r = comm.rank();
    size_t max_unit = 0, max_work = 0;
    for (const plan::MuonUnit& unit : matrices_by_unit(layout)) {
        UnitWork w{unit.begin, 0, 0, false, {}, {}};
        size_t lo = unit.end, hi = unit.begin;  // this rank's part of the unit, from its spans
        for (size_t i = 0; i < spans_.size(); i++) {
            const ShardSpan& s = spans_[i];
            const size_t a = std::max(s.flat_begin, unit.begin), b = std::min(s.flat_begin + s.count, unit.end);
            if (a >= b) continue;
            lo = std::min(lo, a);
            hi = std::max(hi, b);
            for (const plan::MuonMatrix& t : unit.matrices) {
                const size_t ta = std::max(a, t.offset), tb = std::min(b, t.offset + t.numel);
                if (ta >= tb) continue;
                const float scale = std::sqrt(std::max(1.0f, static_cast<float>(t.rows) / static_cast<float>(t.cols)));
                w.slices.push_back({i, ta, tb - ta, scale});
            }
        }
        if (lo >= hi) lo = hi = unit.begin;
        w.mine = lo - unit.begin;
        w.count = hi - lo;
        const size_t unit_size = unit.end - unit.begin;
        // The in-place all-gather needs the ZeRO cut: rank r holds the r-th of W equal slices.
        w.gather = w.count != unit_size;
        if (w.gather && (unit_size % W != 0 || w.count != unit_size / W || w.mine != r * w.count))
            throw Error("Muon", "unit " + layout.units()[static_cast<size_t>(unit.unit)].name + " is not cut into equal per-rank slices");
        for (const plan::MuonMatrix& t : unit.matrices) {
            if (!plan::muon_overlaps(t, lo, hi)) continue;
            w.matrices.push_back({t.offset - unit.begin, t.rows, t.cols});
            const double sd = std::min(t.rows, t.cols), ld = std::max(t.rows, t.cols);
            ns_flops_ += kNsSteps * (4 * sd * sd * ld + 2 * sd * sd * sd);
        }
        // The planner sizes this buffer by the same rule (plan --check's memory.workspace).
        max_work = std::max(max_work, plan::muon_ns_floats(unit, lo, hi));
        max_unit = std::max(max_unit, unit_size);
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
    const float muon_lr = static_cast<float>(lr * lr_ratio_);
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
