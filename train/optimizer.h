// AdamW over a rank's shard: a list of spans of the flat parameter layout (the whole buffer in
// one process; one slice per unit under ZeRO). It owns the FP32 master copy (when the storage
// dtype is BF16 and master weights are on) and both FP32 moments for those spans only, in shard
// order, and applies weight decay to matrices (tensors of 2+ dimensions) only. Unit padding is
// never touched. Muon (train/muon.h) extends it.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/shard_span.h"
#include "model/ops.h"
#include "model/param_layout.h"

namespace sixnd {

// --optimizer: AdamW for everything, or Muon (train/muon.h) for the blocks' matrices with
// AdamW for the rest.
enum class OptimizerKind { adamw, muon };
OptimizerKind parse_optimizer(const std::string& s);  // "adamw" | "muon"; throws Error naming --optimizer
const char* optimizer_name(OptimizerKind k);

struct OptimizerConfig {
    OptimizerKind kind = OptimizerKind::adamw;
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.0f;
    bool master_weights = true;
    // Muon: its peak learning rate (the schedule scales it as it scales --lr), momentum and
    // decoupled weight decay.
    float muon_lr = 0.02f;
    float muon_momentum = 0.95f;
    float muon_weight_decay = 0.0f;
};

class AdamW {
public:
    // Where a span's parameters or gradients are, in the storage dtype.
    using Locate = std::function<void*(const ShardSpan&)>;

    // Master weights are seeded from the parameters `params` locates.
    AdamW(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
          const Locate& params);
    virtual ~AdamW() = default;

    // One update with learning rate lr; grad_scale multiplies every gradient first (clipping).
    // step is 1-based.
    virtual void step(const Locate& params, const Locate& grads, float lr, float grad_scale, int step);
    // FLOPs this rank's optimizer spends per step beyond elementwise work (Muon's Newton-Schulz).
    virtual double matmul_flops_per_step() const { return 0; }

    bool has_master() const { return static_cast<bool>(master_); }
    const std::vector<ShardSpan>& spans() const { return spans_; }
    size_t size() const { return size_; }  // floats in each state buffer
    // State buffers, size() floats each, in shard order; master may be empty.
    DeviceBuffer& master() { return master_; }
    DeviceBuffer& m() { return m_; }
    DeviceBuffer& v() { return v_; }

protected:
    // Only the tensors `updates` accepts get AdamW updates (a subclass updates the others with
    // the same state buffers: master weights and m in the same places).
    AdamW(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
          const Locate& params, const std::function<bool(const TensorInfo&)>& updates);

    struct Piece {
        size_t span;    // index into spans_
        size_t offset;  // elements into the span
        size_t count;
        bool decay;
    };
    Ops& ops_;
    OptimizerConfig cfg_;
    std::vector<ShardSpan> spans_;
    size_t size_ = 0;
    std::vector<Piece> pieces_;
    DeviceBuffer master_, m_, v_;
};

// The whole flat buffer as one span (one process, no ZeRO).
std::vector<ShardSpan> whole_buffer(size_t total);

}  // namespace sixnd
