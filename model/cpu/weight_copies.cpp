// WeightCopies (see weight_copies.h): one pass per use over blocks of rows, in parallel; a block
// whose bf16 bits equal the W panels' is skipped, any other is repacked in every kept role; a role
// used for the first time is packed whole in the same pass. Comparing bits (not values) keeps the
// panels exact for -0 and NaNs too. Blocks are whole panels of the b_trans role (16 rows), so no
// two threads write one panel row.
#include "model/cpu/weight_copies.h"

#include <algorithm>
#include <cstdint>
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

// Whether rows [r0, r1) of w[rows, cols] are, bit for bit, what the W panels (B = w: K = rows,
// N = cols) hold: row k is depth k of every panel, kPanelWidth columns each, in
// bf16_panel_lane's order (bf16_panel_row makes a whole panel row). Panel by panel, so that the
// panels are read as the runs they are (the rows' depths in one panel are contiguous; a panel is
// K panel rows from the next); within a panel the differences are or-ed, not tested per
// value, and the first panel that differs ends the comparison (after an optimizer step that is
// the first one).
bool rows_match(const bf16* panels, const bf16* w, int rows, int cols, int r0, int r1) {
    const int full = cols / kPanelWidth;
    for (int p = 0; p < full; p++) {
        const bf16* panel = panels + static_cast<size_t>(p) * rows * kPanelWidth;
        panel_quads diff = {};
        for (int k = r0; k < r1; k++) {
            panel_quads y;
            std::memcpy(&y, panel + static_cast<size_t>(k) * kPanelWidth, sizeof y);
            diff |= bf16_panel_row(w + static_cast<size_t>(k) * cols + p * kPanelWidth) ^ y;
        }
        long long any = 0;
        for (int q = 0; q < kPanelWidth / 4; q++) any |= diff[q];
        if (any) return false;
    }
    const bf16* last = panels + static_cast<size_t>(full) * rows * kPanelWidth;
    unsigned diff = 0;
    for (int k = r0; k < r1; k++) {
        const bf16* row = w + static_cast<size_t>(k) * cols + full * kPanelWidth;
        const bf16* depth = last + static_cast<size_t>(k) * kPanelWidth;
        for (int j = 0; j < cols - full * kPanelWidth; j++) {
            diff |= row[j].bits ^ depth[bf16_panel_lane(j)].bits;
        }
    }
    return diff == 0;
}

}  // namespace

const bf16* WeightCopies::get(const bf16* w, int rows, int cols, bool b_trans) {
    const size_t n = static_cast<size_t>(rows) * cols;
    const size_t ref_bytes = role_values(rows, cols, false) * sizeof(bf16);
    const size_t role_bytes = role_values(rows, cols, b_trans) * sizeof(bf16);
    const auto key = std::make_pair(w, std::make_pair(rows, cols));
    auto it = copies_.find(key);
    const bool fresh = it == copies_.end();  // nothing packed yet: every block counts as changed
    if (fresh) {
        const size_t need = ref_bytes + (b_trans ? role_bytes : 0);
        if (n == 0 || used_ + need > budget_ || !mem_.holds(w, n * sizeof(bf16), MemCategory::params))
            return nullptr;
        Copy c;
        c.panels[0] = DeviceBuffer(&mem_, ref_bytes, MemCategory::weight_copies);
        used_ += ref_bytes;
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
    const bf16* ref = c.panels[0].as<bf16>();
    const int block = (std::max(1, kBlockElements / std::max(cols, 1)) + kPanelWidth - 1) / kPanelWidth * kPanelWidth;
    const int blocks = (rows + block - 1) / block;
    size_t repacked = 0;
#pragma omp parallel for schedule(static) reduction(+ : repacked) if(worth_threads(n))
    for (int b = 0; b < blocks; b++) {
        const int r0 = b * block, r1 = std::min(rows, r0 + block);
        if (fresh || !rows_match(ref, w, rows, cols, r0, r1)) {
            repacked += r1 - r0;
            for (int role = 0; role < 2; role++)
                if (c.panels[role]) pack_role(c.panels[role].as<bf16>(), w, rows, cols, role == 1, r0, r1);
        } else if (new_role) {
            pack_role(panels.as<bf16>(), w, rows, cols, b_trans, r0, r1);
        }
    }
    rows_repacked_ += repacked;
    return panels.as<bf16>();
}

}  // namespace sixnd::cpu
