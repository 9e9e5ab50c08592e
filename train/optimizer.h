// AdamW over a rank's shard: a list of spans of the flat parameter layout (the whole buffer in
// one process; one slice per unit under ZeRO). It owns the FP32 master copy (when the storage
// dtype is BF16 and master weights are on) and both FP32 moments for those spans only, in shard
// order, and applies weight decay to matrices (tensors of 2+ dimensions) only. Unit padding is
// never touched.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "core/memory.h"
#include "core/shard_span.h"
#include "model/ops.h"
#include "model/param_layout.h"

namespace sixnd {

struct OptimizerConfig {
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.0f;
    bool master_weights = true;
};

class AdamW {
public:
    // Where a span's parameters or gradients are, in the storage dtype.
    using Locate = std::function<void*(const ShardSpan&)>;

    // Master weights are seeded from the parameters `params` locates.
    AdamW(Ops& ops, const ParamLayout& layout, std::vector<ShardSpan> spans, const OptimizerConfig& cfg,
          const Locate& params);

    // One update with learning rate lr; grad_scale multiplies every gradient first (clipping).
    // step is 1-based.
    void step(const Locate& params, const Locate& grads, float lr, float grad_scale, int step);

    bool has_master() const { return static_cast<bool>(master_); }
    const std::vector<ShardSpan>& spans() const { return spans_; }
    size_t size() const { return size_; }  // floats in each state buffer
    // State buffers, size() floats each, in shard order; master may be empty.
    DeviceBuffer& master() { return master_; }
    DeviceBuffer& m() { return m_; }
    DeviceBuffer& v() { return v_; }

private:
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
