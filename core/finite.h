// How many values of a host buffer are NaN or +-Inf: the check that keeps non-finite weights
// out of checkpoints, samples and evaluations.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/bf16.h"
#include "core/dtype.h"

namespace sixnd {

inline size_t count_non_finite(const float* x, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += !std::isfinite(x[i]);
    return bad;
}

// x holds n values of storage dtype t (possibly unaligned bytes from a file).
inline size_t count_non_finite(const void* x, size_t n, DType t) {
    const char* p = static_cast<const char*>(x);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float f;
        if (t == DType::f32) {
            std::memcpy(&f, p + 4 * i, 4);
        } else {
            uint16_t b;
            std::memcpy(&b, p + 2 * i, 2);
            f = bf16::to_float(b);
        }
        bad += !std::isfinite(f);
    }
    return bad;
}

}  // namespace sixnd
