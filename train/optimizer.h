// AdamW over a [begin, end) range of the flat parameter buffer — the whole buffer in one
// process, this rank's shard under ZeRO. It owns the FP32 master copy (when the storage dtype
// is BF16 and master weights are on) and both FP32 moments for that range only, and applies
// weight decay to matrices (tensors of 2+ dimensions) only. Unit padding is never touched.
#pragma once
#include <cstddef>
#include <vector>

#include "core/memory.h"
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
    // params: the model's flat buffer (ops.dtype()); master is seeded from it.
    AdamW(Ops& ops, const ParamLayout& layout, size_t begin, size_t end, const OptimizerConfig& cfg, const void* params);

    // One update of the range with learning rate lr; grad_scale multiplies every gradient first
    // (clipping). step is 1-based.
    void step(void* params, const void* grads, float lr, float grad_scale, int step);

    bool has_master() const { return static_cast<bool>(master_); }
    size_t begin() const { return begin_; }
    size_t end() const { return end_; }
    // Device buffers of the state, for checkpoints: master (may be empty), m, v; (end-begin) floats each.
    DeviceBuffer& master() { return master_; }
    DeviceBuffer& m() { return m_; }
    DeviceBuffer& v() { return v_; }

private:
    struct Piece {
        size_t offset;  // into the flat buffer
        size_t count;
        bool decay;
    };
    Ops& ops_;
    OptimizerConfig cfg_;
    size_t begin_, end_;
    std::vector<Piece> pieces_;
    DeviceBuffer master_, m_, v_;
};

}  // namespace sixnd
