#include "plan/memory.h"

#include <algorithm>

#include "core/zero_slots.h"
#include "model/ops.h"  // Ops::newton_schulz_floats, header-only

namespace sixnd::plan {

double LayoutShape::max_other() const {
    return units.size() < 2 ? 0 : *std::max_element(units.begin() + 1, units.end());
}
double LayoutShape::max_unit() const { return units.empty() ? 0 : *std::max_element(units.begin(), units.end()); }

LayoutShape layout_from_count(double params) {
    LayoutShape l;
    l.total = params;
    return l;
}

StateBytes model_state_bytes(const LayoutShape& l, int stage, int n, int e, bool master) {
    StateBytes s;
    const double psi = l.total, shard = stage > 0 ? psi / n : psi;
    s.adam_m = s.adam_v = 4 * shard;
    s.master = master && e < 4 ? 4 * shard : 0;
    s.params = e * (stage < 3 ? psi : psi / n + l.unit0() + kZero3UnitSlots * l.max_other());
    s.grads = e * (stage < 2 ? psi : psi / n + l.unit0() + l.max_other());
    s.workspace = stage >= 1 ? e * l.max_unit() / n : 0;
    return s;
}

// Per token of a layer: always kept (per layer under none and selective) qkv (QW), attention
// output and residual (2C), fc output (F) in e bytes; float statistics (layernorm mean and
// rstd, or RMSNorm's rstd, twice), attention stats, qk-norm's rstd per head. Kept or shared
// (selective) : both norm outputs (2C), the MLP activation (H), qk-norm's output (QW).
// GPT-2 (QW = 3C, F = H = 4C): 9 C e + 16 + 4 stats, and 6 C e.
ActivationBytes activation_bytes(const ActivationShape& s, int batch, int seq_len, Recompute r, int e) {
    return activation_bytes(s, batch, seq_len, r, e, StageShare{s.n_layer, true, true, 1});
}

ActivationBytes activation_bytes(const ActivationShape& s, int batch, int seq_len, Recompute r, int e, const StageShare& stage) {
    const double N = static_cast<double>(batch) * seq_len, C = s.n_embd, L = stage.layers;
    const double nkv = s.n_kv_head > 0 ? s.n_kv_head : s.n_head;
    const double QW = C + 2 * nkv * (C / s.n_head), H = s.hidden > 0 ? s.hidden : 4 * C, F = s.swiglu ? 2 * H : H;
    const double norm_floats = s.rmsnorm ? 1 : 2;
    const double stats = s.flash ? s.n_head : static_cast<double>(s.n_head) * seq_len;
    const double qk_floats = s.qk_norm ? s.n_head + nkv : 0;
    const double layer_always = N * ((QW + 2 * C + F) * e + 8 * norm_floats + 4 * stats + 4 * qk_floats);
    const double layer_kept = N * ((2 * C + H + (s.qk_norm ? QW : 0)) * e);
    double layers = 0, recomputed = 0;
    switch (r) {
        case Recompute::none: layers = L * (layer_always + layer_kept); break;
        case Recompute::selective:
            layers = L * layer_always;
            recomputed = layer_kept;
            break;
        case Recompute::full: recomputed = layer_always + layer_kept; break;
    }
    // The trainer keeps every attention row's largest logit (a spike's evidence), a float per
    // row and head in each layer, whatever the recompute policy.
    const double row_max = L * N * s.n_head * 4;
    // The stage's input and each block's output; input ids; targets, final norm and its
    // statistics, logits and loss.
    const double stream = N * (L + 1) * C * e;
    const double ids = stage.first ? N * 4 : 0;
    const double head = stage.last ? N * (4 + C * e + 4 * norm_floats + s.padded_vocab * static_cast<double>(e) + 4) : 0;
    const double projection = N * C * e;
    ActivationBytes a;
    a.activations = stage.in_flight * (layers + row_max + stream + ids + head) + recomputed + projection;
    a.workspace = N * (2 * C + F + QW + (s.swiglu ? H : 0) + (s.qk_norm ? QW : 0)) * e;
    return a;
}

CommBytes comm_bytes_per_step(const LayoutShape& l, int stage, int n, int e, double micro) {
    CommBytes c;
    if (n <= 1) return c;
    const double part = (n - 1.0) / n * e;  // of a buffer, per reduce-scatter or all-gather
    const double psi = l.total;
    switch (stage) {
        case 0: c.all_reduce = 2 * part * psi; break;
        case 1: c.reduce_scatter = part * psi; c.all_gather = part * psi; break;
        case 2: c.reduce_scatter = micro * part * psi; c.all_gather = part * psi; break;
        default: {
            c.reduce_scatter = micro * part * psi;
            if (l.units.empty()) {
                c.all_gather = 2 * micro * part * psi;
                break;
            }
            const int last = static_cast<int>(l.units.size()) - 1;
            auto sum = [&](int a, int b) {
                double t = 0;
                for (int u = std::max(a, 0); u <= b && u <= last; u++) t += l.units[u];
                return t;
            };
            const double first_forward = psi, later_forward = sum(3, last), backward = sum(1, last - 2);
            c.all_gather = part * (first_forward + (micro - 1) * later_forward + micro * backward);
        }
    }
    return c;
}

MuonCost muon_cost(const LayoutShape& l, int stage, int n, double ns_floats) {
    MuonCost m;
    double blocks = 0, widest = 0;
    for (size_t u = 1; u + 1 < l.units.size(); u++) {
        blocks += l.units[u];
        widest = std::max(widest, l.units[u]);
    }
    m.workspace = 4 * (widest + ns_floats);
    m.all_gather = muon_all_gather_bytes(blocks, stage, n);
    return m;
}

double muon_all_gather_bytes(double block_elements, int stage, int n) {
    return stage >= 1 && n > 1 ? (n - 1.0) / n * 4 * block_elements : 0;
}

size_t muon_ns_floats(const MuonUnit& u, size_t lo, size_t hi) {
    size_t most = 0;
    for (const MuonMatrix& t : u.matrices)
        if (muon_overlaps(t, lo, hi)) most = std::max(most, Ops::newton_schulz_floats(t.rows, t.cols));
    return most;
}

size_t muon_ns_floats(const std::vector<MuonUnit>& units, int stage, int ranks, int rank) {
    size_t most = 0;
    for (const MuonUnit& u : units) {
        size_t lo = u.begin, hi = u.end;
        if (stage >= 1 && ranks > 1) {
            const size_t slice = (u.end - u.begin) / static_cast<size_t>(ranks);
            lo = u.begin + static_cast<size_t>(rank) * slice;
            hi = lo + slice;
        }
        most = std::max(most, muon_ns_floats(u, lo, hi));
    }
    return most;
}

}  // namespace sixnd::plan
