// Branch-free float math for the CPU kernels. libm's expf is a scalar call unless the build
// uses -ffast-math (which would also cost determinism and NaN checks), so the kernels use this
// exp, which the compiler vectorises inside `#pragma omp simd` loops. NaN in gives NaN out.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/bf16.h"
#include "model/cpu/simd.h"

namespace sixnd::cpu {

// exp(x) to about 2 ulp. Large x gives inf (from x > 88.38, a little before exp truly
// overflows at 88.72, as 2^128 is built as inf); the argument is clamped below at -87
// so that 2^n stays a normal float, which makes exp(-inf) 1.6e-38 rather than 0: harmless next
// to the terms of order 1 it is summed with in a softmax.
inline float exp_fast(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 89.0f ? 89.0f : x;  // n <= 128: the exponent field 255 below is exactly inf
    // n = round(x / ln2) via the 1.5 * 2^23 trick: its low mantissa bits then hold n, so 2^n is
    // built with integer operations only (no float-to-int conversion, which is UB for NaN).
    const float shifter = 12582912.0f;
    float t = x * 1.44269504088896341f + shifter;
    float n = t - shifter;
    // r = x - n ln2 in two parts (Cody-Waite), |r| <= ln2 / 2.
    float r = x - n * 0.693145751953125f;
    r = r - n * 1.428606765330187e-06f;
    // Taylor series to r^7: truncation error (ln2/2)^8 / 8! ~ 5e-9.
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t tb;
    std::memcpy(&tb, &t, 4);
    uint32_t sb = (tb - 0x4B400000u + 127u) << 23;
    float s;
    std::memcpy(&s, &sb, 4);
    return p * s;
}

// A norm's rstd, 1 / sqrt(ss / n + eps), from ss, the FP32 sum of the n squares (x[i] - m)^2.
// Squares of finite values past 1.8e19 overflow that sum to infinity, which made rstd 0 and the
// normalised row 0 (a LayerNorm's output its bias alone): finite, wrong and silent. Such a sum is
// redone in double, which holds any float's square; an infinite or NaN input still gives NaN.
template <typename X>
inline float norm_rstd(float ss, const X* x, int n, float m, float eps) {
    if (ss != INFINITY) return 1.0f / std::sqrt(ss / n + eps);
    double wide = 0.0;
    for (int i = 0; i < n; i++) {
        const double d = static_cast<double>(to_f32(x[i])) - m;
        wide += d * d;
    }
    return static_cast<float>(1.0 / std::sqrt(wide / n + eps));
}

// tanh-approximation GELU, written as x * sigmoid(2u) = 0.5 x (1 + tanh u) so that it needs
// one exp and has no cancellation near u = 0.
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

inline float gelu(float x) {
    float u = kGeluScale * (x + kGeluCubic * x * x * x);
    return x / (1.0f + exp_fast(-2.0f * u));
}

// Past |x| = 20 the sigmoid is exactly 0 or 1, so s (1 - s) is 0 and du only matters by being
// finite: unclamped, x^2 overflows above ~1.8e19 and 0 * inf made the gradient NaN.
inline float gelu_grad(float x) {
    float u = kGeluScale * (x + kGeluCubic * x * x * x);
    float s = 1.0f / (1.0f + exp_fast(-2.0f * u));
    float xc = x < -20.0f ? -20.0f : x > 20.0f ? 20.0f : x;
    float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * xc * xc);
    return s + 2.0f * x * s * (1.0f - s) * du;
}

// out[i] = f(i) stored as X, for i < n. For bf16 the math goes to a float block of kRoundBlock
// values first and is rounded in a second loop: GCC vectorises a loop that computes float math
// and stores bf16 at the bf16 width (16 lanes), where GELU's constants and temporaries no
// longer fit the registers, and bf16 GELU ran at 1.8x the FP32 time; split, the math runs at
// the float width (bf16 GELU 1.23 -> 0.95 ms per 1M values on one AVX2 core). Same bits. Each
// block is computed whole before any of it is stored, so out may alias what f reads at i.
// Where the build targets AVX2 without AVX-512, the rounding loop goes through store16: the
// compiler's vectorised bf16::from_float takes 27 instructions per 16 values there (narrowed
// masks, a byte blend), store16 19 (bf16 GELU backward 1.11 -> 1.06x FP32's time on one core);
// with AVX-512 its mask registers make the compiler's loop as short.
constexpr size_t kRoundBlock = 256;
#if defined(__AVX2__) && !defined(__AVX512F__)
constexpr bool kExplicitRounding = true;
#else
constexpr bool kExplicitRounding = false;
#endif
template <typename X, typename F>
inline void store_rounded(X* out, size_t n, F f) {
    if constexpr (std::is_same_v<X, float>) {
#pragma omp simd
        for (size_t i = 0; i < n; i++) out[i] = f(i);
    } else {
        float t[kRoundBlock];
        for (size_t i0 = 0; i0 < n; i0 += kRoundBlock) {
            const size_t m = n - i0 < kRoundBlock ? n - i0 : kRoundBlock;
#pragma omp simd
            for (size_t i = 0; i < m; i++) t[i] = f(i0 + i);
            size_t i = 0;
            if constexpr (kExplicitRounding)
                for (; i + 16 <= m; i += 16) store16(out + i0 + i, load8(t + i), load8(t + i + 8));
#pragma omp simd
            for (size_t j = i; j < m; j++) out[i0 + j] = from_f32<X>(t[j]);
        }
    }
}

}  // namespace sixnd::cpu
