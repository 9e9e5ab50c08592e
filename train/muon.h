// Muon (Keller Jordan's optimizer of the modded-nanogpt speedrun) for the hidden matrices, AdamW
// for everything else. A Muon matrix is any 2-D tensor inside a transformer block (a unit named
// "h.N"), whatever its name: embeddings, a separate LM head, norms and biases stay on AdamW.
// For a Muon matrix W[rows, cols] with gradient G, each step:
//   G *= grad_scale;  M = beta M + (1 - beta) G;  U = (1 - beta) G + beta M   (Nesterov)
//   O = NewtonSchulz5(U)        (Ops::newton_schulz: quintic, 5 steps, FP32)
//   W = W (1 - lr wd) - lr sqrt(max(1, rows / cols)) O
// with lr = --muon-lr scaled by the schedule as it scales --lr. The scale makes the update's
// RMS independent of the aspect ratio for tall matrices (KellerJordan/Muon's choice).
//
// State: AdamW's buffers, unchanged in layout: master weights as AdamW keeps them, M in the
// m buffer's places for Muon matrices (v stays zero there), so checkpoints and ZeRO resharding
// need nothing new.
//
// ZeRO (stages 1-3 cut every unit into per-rank slices, which cut matrices): every block unit
// holding a Muon matrix is handled as a whole. Each rank writes U for its own slice into an
// FP32 unit-sized buffer, the unit is all-gathered (4 bytes x unit size, (n-1)/n of it sent per
// rank), and each rank runs Newton-Schulz on every matrix that overlaps its slice and applies
// its own slice of the result. A matrix that straddles a slice boundary is orthogonalised on
// both ranks (the same input, the same bits); stage 0 and one process need no gather.
#pragma once
#include <memory>
#include <vector>

#include "dist/comm.h"
#include "plan/memory.h"
#include "train/optimizer.h"

namespace sixnd {

class Muon final : public AdamW {
public:
    static constexpr int kNsSteps = 5;
    // Whether Muon (rather than AdamW) updates tensor t.
    static bool updates(const TensorInfo& t, const ParamLayout& layout);
    // The tensors Muon updates, unit by unit (units without one left out), in layout order. A
    // rank's Newton-Schulz buffer is plan::muon_ns_floats over them and its part of each unit.
    static std::vector<plan::MuonUnit> matrices_by_unit(const ParamLayout& layout);

    // peak_lr: the schedule's peak (--lr); Muon's rate is cfg.muon_lr / peak_lr times the
    // scheduled one. comm: the ranks the spans were cut for (ZeRO).
    Muon(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
         const Locate& params, Comm& comm, float peak_lr);

    void step(const Locate& params, const Locate& grads, float lr, float grad_scale, int step) override;
    double matmul_flops_per_step() const override { return ns_flops_; }

private:
    struct Matrix {
        size_t at;  // elements into the unit
        int rows, cols;
    };
    struct Slice {  // a piece of a Muon matrix in this rank's shard
        size_t span;
        size_t flat;  // first element in the flat layout
        size_t count;
        float scale;  // sqrt(max(1, rows / cols))
    };
    struct UnitWork {
        size_t begin;        // the unit's first element in the flat layout
        size_t mine, count;  // this rank's part of the unit: elements into it, and how many
        bool gather;         // the part is a ZeRO slice: all-gather the unit's directions
        std::vector<Matrix> matrices;  // those overlapping this rank's part
        std::vector<Slice> slices;
    };
    Comm& comm_;
    // In double: a --lr near float's smallest (1e-42) over --muon-lr overflows float to infinity.
    double lr_ratio_;
    std::vector<UnitWork> units_;
    DeviceBuffer dir_, work_;  // one unit of FP32 directions; Newton-Schulz workspace
    double ns_flops_ = 0;
};

// AdamW or Muon, as cfg.kind says.
std::unique_ptr<AdamW> make_optimizer(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans,
                                      const OptimizerConfig& cfg, const AdamW::Locate& params, Comm& comm,
                                      float peak_lr);

}  // namespace sixnd
