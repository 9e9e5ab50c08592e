// Packed panels of bf16 weights for the packed GEMM (gemm_packed.h), where bf16 runs in FP32
// arithmetic (CPUs without BF16 dot products). A weight changes once per optimizer step but is
// multiplied several times in between (forward, backward, recomputed forward, every micro-step of
// an accumulation), in two roles: as W^T in forward (b_trans) and as W for the input gradient.
// Packing it per call is a memory-bound pass as long as the product itself at small M. This keeps,
// per weight (its address and shape), the panels of the W role always — they are the weight's
// rows in another order, so they serve as the record of what was packed — and those of the W^T
// role once it is used. Each use compares the weight with the W panels block of rows by block of
// rows (a read-only pass) and repacks, in both roles, only the rows that differ, so the panels are
// always exactly the weight as it is now, whoever wrote it (optimizer, ZeRO gather into a reused
// buffer, a checkpoint load, a test) — no signal from the writer is needed. (A separate bf16
// snapshot to compare against cost 2 more bytes per element and a third write on every refresh.)
// Only weights in parameter memory (allocated as MemCategory::params: the model's parameters,
// ZeRO-3's gathered units) are kept, so that a transient buffer (a benchmark's, the peak
// measurement's) leaves no copy behind. 2 bytes per element and role (N padded to 16): 4 bytes per
// element in training, in the ledger as MemCategory::weight_copies. Once the budget is full,
// further weights or roles are not kept (the GEMM packs them per call): evicting would be worse,
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

// Bytes of copies kept at most: GPT-2 124M's matmul weights take 0.5 GB in training.
constexpr size_t kWeightCopyBudget = size_t(2) << 30;

class WeightCopies {
public:
    WeightCopies(MemoryBackend& mem, size_t budget_bytes = kWeightCopyBudget) : mem_(mem), budget_(budget_bytes) {}

    // The packed panels of w[rows, cols] (row-major) as a GEMM's B: b_trans, B = w^T (K = cols,
    // N = rows), else B = w (K = rows, N = cols); current with w's contents. Null when w is not
    // in parameter memory or does not fit the budget.
    const bf16* get(const bf16* w, int rows, int cols, bool b_trans);
    size_t bytes() const { return used_; }
    // Rows repacked so far (a weight's first use counts all of them): what a use costs.
    size_t rows_repacked() const { return rows_repacked_; }

private:
    struct Copy {
        // [b_trans]: the packed panels (bf16) of that role; [0] (B = w) always, and w as it was
        // when the panels were last brought up to date.
        DeviceBuffer panels[2];
    };
    MemoryBackend& mem_;
    size_t budget_;
    size_t used_ = 0;
    size_t rows_repacked_ = 0;
    std::map<std::pair<const bf16*, std::pair<int, int>>, Copy> copies_;
};

}  // namespace sixnd::cpu
