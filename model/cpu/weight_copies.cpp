// WeightCopies (see weight_copies.h): one pass per use over blocks of rows, in parallel; a block
// whose bf16 bits equal the snapshot's is skipped, any other is copied to the snapshot and
// repacked in every kept role. Comparing bits (not values) keeps the panels exact for -0 and NaNs
// too. Blocks are whole panels of the b_trans role (16 rows), so no two threads write one panel row.
#include "model/cpu/weight_copies.h"

#include <algorithm>
#include <cstring>

#include "model/cpu/gemm_packed.h"
#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {

constexpr int kBlockElements = 4096;

// Rows [r0, r1) of w[rows, cols] into the panels of role b_trans.
void pack_role(bf16* panels, const bf16* w, int rows, int cols, bool b_trans, int r0, int r1) {
    if (b_trans) pack_b_rows(panels, w, true, cols, rows, r0, r1);
    else pack_b_rows(panels, w, false, rows, cols, r0, r1);
}

size_t role_values(int rows, int cols, bool b_trans) {
    return b_trans ? packed_b_size(cols, rows) : packed_b_size(rows, cols);
}

}  // namespace

const bf16* WeightCopies::get(const bf16* w, int rows, int cols, bool b_trans) {
    const size_t n = static_cast<size_t>(rows) * cols;
    const size_t role_bytes = role_values(rows, cols, b_trans) * sizeof(bf16);
    const auto key = std::make_pair(w, std::make_pair(rows, cols));
    auto it = copies_.find(key);
    if (it == copies_.end()) {
        if (n == 0 || used_ + n * sizeof(bf16) + role_bytes > budget_ ||
            !mem_.holds(w, n * sizeof(bf16), MemCategory::params))
            return nullptr;
        Copy c;
        c.snapshot = DeviceBuffer(&mem_, n * sizeof(bf16), MemCategory::weight_copies);
        std::memcpy(c.snapshot.get(), w, n * sizeof(bf16));
        used_ += n * sizeof(bf16);
        it = copies_.emplace(key, std::move(c)).first;
    } else {
        Copy& c = it->second;
        bf16* snap = c.snapshot.as<bf16>();
        const int block = (std::max(1, kBlockElements / std::max(cols, 1)) + kPanelWidth - 1) / kPanelWidth * kPanelWidth;
        const int blocks = (rows + block - 1) / block;
#pragma omp parallel for schedule(static) if(worth_threads(n))
        for (int b = 0; b < blocks; b++) {
            const int r0 = b * block, r1 = std::min(rows, r0 + block);
            const size_t at = static_cast<size_t>(r0) * cols, len = static_cast<size_t>(r1 - r0) * cols;
            if (std::memcmp(w + at, snap + at, len * sizeof(bf16)) == 0) continue;
            std::memcpy(snap + at, w + at, len * sizeof(bf16));
            for (int role = 0; role < 2; role++)
                if (c.panels[role]) pack_role(c.panels[role].as<bf16>(), w, rows, cols, role == 1, r0, r1);
        }
    }
    DeviceBuffer& panels = it->second.panels[b_trans];
    if (!panels) {
        if (used_ + role_bytes > budget_) return nullptr;
        panels = DeviceBuffer(&mem_, role_bytes, MemCategory::weight_copies);
        used_ += role_bytes;
        bf16* p = panels.as<bf16>();
        const int block = kPanelWidth * 16;
        const int blocks = (rows + block - 1) / block;
#pragma omp parallel for schedule(static) if(worth_threads(n))
        for (int b = 0; b < blocks; b++) pack_role(p, w, rows, cols, b_trans, b * block, std::min(rows, (b + 1) * block));
    }
    return panels.as<bf16>();
}

}  // namespace sixnd::cpu
