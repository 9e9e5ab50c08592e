// WeightCopies (see weight_copies.h): one pass per use over blocks of kBlock elements, in
// parallel; a block whose bf16 bits equal the snapshot's is skipped, any other is copied to the
// snapshot and widened. Comparing bits (not values) keeps the copy exact for -0 and NaNs too.
#include "model/cpu/weight_copies.h"

#include <algorithm>
#include <cstring>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {

constexpr size_t kBlock = 4096;

// Brings f32/snap up to date with w[0, n); fresh: nothing is there yet, skip the comparison.
void refresh(float* f32, bf16* snap, const bf16* w, size_t n, bool fresh) {
    const size_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if(worth_threads(n))
    for (size_t b = 0; b < blocks; b++) {
        const size_t i0 = b * kBlock, len = std::min(kBlock, n - i0);
        if (!fresh && std::memcmp(w + i0, snap + i0, len * sizeof(bf16)) == 0) continue;
        std::memcpy(snap + i0, w + i0, len * sizeof(bf16));
#pragma omp simd
        for (size_t i = i0; i < i0 + len; i++) f32[i] = to_f32(w[i]);
    }
}

}  // namespace

const float* WeightCopies::get(const bf16* w, size_t n) {
    const size_t need = n * (sizeof(float) + sizeof(bf16));
    auto it = copies_.find(std::make_pair(w, n));
    const bool fresh = it == copies_.end();
    if (fresh) {
        if (n == 0 || used_ + need > budget_ || !mem_.holds(w, n * sizeof(bf16), MemCategory::params)) return nullptr;
        Copy c;
        c.f32 = DeviceBuffer(&mem_, n * sizeof(float), MemCategory::weight_copies);
        c.snapshot = DeviceBuffer(&mem_, n * sizeof(bf16), MemCategory::weight_copies);
        it = copies_.emplace(std::make_pair(w, n), std::move(c)).first;
        used_ += need;
    }
    Copy& c = it->second;
    refresh(c.f32.as<float>(), c.snapshot.as<bf16>(), w, n, fresh);
    return c.f32.as<float>();
}

}  // namespace sixnd::cpu
