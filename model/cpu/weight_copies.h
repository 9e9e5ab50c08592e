// FP32 copies of bf16 weights for the widened BF16 matmul (CPUs without BF16 dot products).
// A weight changes once per optimizer step but is multiplied several times in between (forward,
// backward, recomputed forward, every micro-step of an accumulation): widening it on each call
// is a memory-bound pass as long as the product itself at small M. This keeps, per weight (its
// address and length), an FP32 copy and a bf16 snapshot of what was copied. Each use compares the
// weight with the snapshot block by block (a read-only pass, ~1/3 of the widening's traffic) and
// re-widens only the blocks that differ, so the copy is always exactly to_f32 of the weight as it
// is now, whoever wrote it (optimizer, ZeRO gather into a reused buffer, a checkpoint load, a
// test) — no signal from the writer is needed. Only weights in parameter memory (allocated as
// MemCategory::params: the model's parameters, ZeRO-3's gathered units) are kept, so that a
// transient buffer (a benchmark's, the peak measurement's) leaves no copy behind. 6 bytes per
// kept element, in the ledger as MemCategory::weight_copies. Once the budget is full, further
// weights are not kept (the caller widens them per call, as before): evicting would be worse,
// since a training step walks the same weights in the same order every time, where
// least-recently-used keeps nothing it reuses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "core/bf16.h"
#include "core/memory.h"

namespace sixnd::cpu {

// Bytes of copies (FP32 copy + bf16 snapshot) kept at most: GPT-2 124M's matmul weights take 0.74 GB.
constexpr size_t kWeightCopyBudget = size_t(2) << 30;

class WeightCopies {
public:
    WeightCopies(MemoryBackend& mem, size_t budget_bytes = kWeightCopyBudget) : mem_(mem), budget_(budget_bytes) {}

    // The FP32 copy of w[0, n), current with w's contents; null when w is not in parameter memory
    // or does not fit the budget.
    const float* get(const bf16* w, size_t n);
    size_t bytes() const { return used_; }

private:
    struct Copy {
        DeviceBuffer f32;       // float[n]
        DeviceBuffer snapshot;  // bf16[n]: w as it was when f32 was last brought up to date
    };
    MemoryBackend& mem_;
    size_t budget_;
    size_t used_ = 0;
    std::map<std::pair<const bf16*, size_t>, Copy> copies_;
};

}  // namespace sixnd::cpu
