// The ZeRO engine (stages 0-3), as UnitHooks the model calls around each unit.
//
// Every unit is padded to a multiple of the world size, and rank r owns the r-th slice of every
// unit; a rank's shard is the concatenation of its slices (ShardSpan::local is the offset in
// it), the same ranges in master weights, both Adam moments and, at stages 2-3, gradients and
// parameters.
//   stage 0: full parameters and gradients everywhere; each unit's gradient is all-reduced
//            after its backward on the last micro-step; every rank updates everything.
//   stage 1: full parameters and gradients; each unit's gradient is reduce-scattered on the
//            last micro-step; a rank updates its slices, then every unit is all-gathered.
//   stage 2: full parameters; gradients live in a unit-sized bucket while backward fills it,
//            then are reduce-scattered into the rank's gradient shard (every micro-step,
//            accumulating); only the shard is kept.
//   stage 3: parameters sharded too: a unit is all-gathered into a slot before its forward and
//            again before its backward, the next unit is prefetched into the other slot while
//            the current one computes, and slots are reused (released) as the pass moves on.
//            The embeddings unit keeps a slot of its own for the step, since wte is used at
//            both ends of the model.
// Memory per rank (Ψ parameters, n ranks): 16Ψ; 4Ψ + 12Ψ/n; 2Ψ + 14Ψ/n; 16Ψ/n plus the
// gathered slots and gradient buckets.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"
#include "core/shard_span.h"
#include "core/unit_hooks.h"
#include "core/zero_slots.h"
#include "dist/comm.h"

namespace sixnd {

// What a stage asks of the model: unit padding so that every unit splits evenly over `world`
// ranks, and which full flat buffers the model allocates itself (stages 2-3 keep full
// gradients, and stage 3 full parameters, only one unit at a time, in the engine's buffers).
struct ZeroModelBuffers {
    size_t unit_align;
    bool full_params;
    bool full_grads;
};
ZeroModelBuffers zero_model_buffers(int stage, int world);

class ZeroEngine final : public UnitHooks {
public:
    using AddFn = std::function<void(void* dst, const void* src, size_t n)>;  // dst[i] += src[i], storage dtype

    // full_params / full_grads: the model's flat buffers (null where the stage does not keep them).
    ZeroEngine(int stage, Comm& comm, MemoryBackend& mem, DType dtype, std::vector<UnitSpan> units, UnitMemory& model,
               void* full_params, void* full_grads, AddFn add);
    ~ZeroEngine() override;

    int stage() const { return stage_; }
    const std::vector<ShardSpan>& shard() const { return shard_; }
    // Whether the rank's gradients are partial sums of the global norm (stages 1-3, n > 1).
    bool norm_is_partial() const { return stage_ > 0 && comm_.size() > 1; }
    // Where the rank's parameters and gradients for a span are.
    void* param_at(const ShardSpan& s) const;
    void* grad_at(const ShardSpan& s) const;

    void begin_step();                 // zeroes the gradient shard (stages 2/3)
    void set_last_micro(bool last) { last_micro_ = last; }
    void after_optimizer();            // stages 1/2: all-gather parameters; 3: invalidate slots

    // Parameters in the full flat layout (storage dtype), for initialisation and checkpoints.
    // Collectives: load_params refuses (AgreedError, every rank) ranks that load different ones.
    void load_params(const void* host_full);
    std::vector<char> gather_params();

    void before_forward(int unit) override;
    void before_backward(int unit) override;
    void after_backward(int unit) override;

private:
    struct Slot;
    size_t slice(int unit) const { return units_[unit].size() / comm_.size(); }
    void ensure_gathered(int unit);
    void prefetch(int unit);
    int next_unit(int unit, bool forward) const;

    int stage_;
    Comm& comm_;
    MemoryBackend& mem_;
    DType dtype_;
    size_t es_;
    std::vector<UnitSpan> units_;
    UnitMemory& model_;
    void* full_params_;
    void* full_grads_;
    AddFn add_;
    std::vector<ShardSpan> shard_;
    size_t shard_elems_ = 0;
    bool last_micro_ = true;
    bool head_seen_ = false;
    DeviceBuffer param_shard_, grad_shard_, scratch_, bucket0_, bucket_;
    std::vector<std::unique_ptr<Slot>> slots_;  // [0]: the embeddings unit; [1..kZero3UnitSlots]: the others
    int current_ = -1;
};

}  // namespace sixnd
