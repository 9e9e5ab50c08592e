// WeightCopies (see weight_copies.h): one pass per use over blocks of rows, in parallel; a block
// whose bf16 bits equal the snapshot's is skipped, any other is copied to the snapshot and
// repacked in every kept role; a role used for the first time is packed whole in the same pass.
// Comparing bits (not values) keeps the panels exact for -0 and NaNs too. Blocks are whole panels
// of the b_trans role (16 rows), so no two threads write one panel row.
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
    const size_t snap_bytes = n * sizeof(bf16), role_bytes = role_values(rows, cols, b_trans) * sizeof(bf16);
    const auto key = std::make_pair(w, std::make_pair(rows, cols));
    auto it = copies_.find(key);
    const bool fresh = it == copies_.end();  // no snapshot yet: every block counts as changed
    if (fresh) {
        if (n == 0 || used_ + snap_bytes + role_bytes > budget_ || !mem_.holds(w, snap_bytes, MemCategory::params))
            return nullptr;
        Copy c;
        c.snapshot = DeviceBuffer(&mem_, snap_bytes, MemCategory::weight_copies);
        used_ += snap_bytes;
        it = copies_.emplace(key, std::move(c)).first;
    }
    Copy& c = it->second;
    DeviceBuffer& panels = c.panels[b_trans];
    const bool new_role = !panels;  // this role's panels are packed whole, changed or not
    if (new_role) {
        if (used_ + role_bytes > budget_) return nullptr;
        panels = DeviceBuffer(&mem_, role_bytes, MemCategory::weight_copies);
        used_ += role_bytes;
    }
    bf16* snap = c.snapshot.as<bf16>();
    const int block = (std::max(1, kBlockElements / std::max(cols, 1)) + kPanelWidth - 1) / kPanelWidth * kPanelWidth;
    const int blocks = (rows + block - 1) / block;
#pragma omp parallel for schedule(static) if(worth_threads(n))
    for (int b = 0; b < blocks; b++) {
        const int r0 = b * block, r1 = std::min(rows, r0 + block);
        const size_t at = static_cast<size_t>(r0) * cols, len = static_cast<size_t>(r1 - r0) * cols;
        if (fresh || std::memcmp(w + at, snap + at, len * sizeof(bf16)) != 0) {
            std::memcpy(snap + at, w + at, len * sizeof(bf16));
            for (int role = 0; role < 2; role++)
                if (c.panels[role]) pack_role(c.panels[role].as<bf16>(), w, rows, cols, role == 1, r0, r1);
        } else if (new_role) {
            pack_role(panels.as<bf16>(), w, rows, cols, b_trans, r0, r1);
        }
    }
    return panels.as<bf16>();
}

}  // namespace sixnd::cpu
