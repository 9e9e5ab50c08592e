// Eight floats as one value, for accumulators the compiler must keep in registers: a local float
// array in a loop that also stores through pointers stays in memory (the compiler cannot prove
// the pointers miss it). GCC/Clang vector extension: one AVX register where the build targets
// AVX, two SSE or NEON registers otherwise. a += s * v with a scalar s is one FMA per lane where
// the target has FMA.
#pragma once
#include <cmath>
#include <cstring>

#include "core/bf16.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace sixnd::cpu {

typedef float f32x8 __attribute__((vector_size(32)));
typedef unsigned u32x8 __attribute__((vector_size(32)));
typedef unsigned short u16x8 __attribute__((vector_size(16)));

// The widest float vector the build targets: 16 lanes with AVX-512, else 8 (f32x8). For float
// loops whose lanes are independent, so that the width changes the speed and never the bits.
#if defined(__AVX512F__)
constexpr int kWide = 16;
#else
constexpr int kWide = 8;
#endif
typedef float f32xw __attribute__((vector_size(kWide * sizeof(float))));
// A float vector of either width from and to memory, by value: an accumulator whose address is
// never taken stays in registers.
template <typename Vec>
inline Vec load_vec(const float* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <typename Vec>
inline void store_vec(float* p, Vec v) {
    std::memcpy(p, &v, sizeof v);
}
inline f32x8 load8(const float* p) { return load_vec<f32x8>(p); }
inline void store8(float* p, f32x8 v) { store_vec(p, v); }

// Eight bf16 values widened (exact), and eight floats rounded to bf16 as bf16::from_float does
// (nearest, ties to even; NaN stays a quiet NaN) — the same bits, eight at a time.
inline f32x8 widen8(u16x8 h) {
#if defined(__AVX2__)
    // One widening instruction: GCC 12 builds the generic conversion below from two 128-bit
    // halves and an insert, three instructions more on every bf16 load.
    return (f32x8)_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32((__m128i)h), 16));
#else
    const u32x8 u = __builtin_convertvector(h, u32x8) << 16;
    f32x8 v;
    std::memcpy(&v, &u, sizeof v);
    return v;
#endif
}
#if defined(__AVX2__)
// Eight floats rounded to bf16, left as eight 32-bit lanes: the NaN test is one float compare
// and the choice one blend, where the generic code below takes an unsigned compare (three
// instructions without AVX-512) and a byte blend of narrowed masks.
inline __m256i round8_lanes(f32x8 v) {
    const __m256i u = _mm256_castps_si256((__m256)v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    const __m256i up = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
    const __m256i rounded = _mm256_srli_epi32(up, 16);
    const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    const __m256 nan = _mm256_cmp_ps((__m256)v, (__m256)v, _CMP_UNORD_Q);
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(rounded), _mm256_castsi256_ps(quiet), nan));
}
#endif
inline u16x8 round8(f32x8 v) {
#if defined(__AVX2__)
    const __m256i r = round8_lanes(v);
    return (u16x8)_mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
#else
    u32x8 u;
    std::memcpy(&u, &v, sizeof u);
    const u32x8 rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const u32x8 quiet = (u >> 16) | 0x40u;
    const u32x8 r = (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
    return __builtin_convertvector(r, u16x8);
#endif
}
inline f32x8 load8(const bf16* p) {
    u16x8 h;
    std::memcpy(&h, p, sizeof h);
    return widen8(h);
}
inline void store8(bf16* p, f32x8 v) {
    const u16x8 h = round8(v);
    std::memcpy(static_cast<void*>(p), &h, sizeof h);
}
// Sixteen floats (lo, then hi) rounded to bf16 into p[0..15]: with AVX2 one pack and one
// permute for the sixteen, one 32-byte store.
inline void store16(bf16* p, f32x8 lo, f32x8 hi) {
#if defined(__AVX2__)
    const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(round8_lanes(lo), round8_lanes(hi)), 0xd8);
    std::memcpy(static_cast<void*>(p), &h, sizeof h);
#else
    store8(p, lo);
    store8(p + 8, hi);
#endif
}
// Lanewise square root, correctly rounded as std::sqrt.
inline f32x8 sqrt8(f32x8 v) {
#if defined(__AVX2__)
    return (f32x8)_mm256_sqrt_ps((__m256)v);
#else
    for (int i = 0; i < 8; i++) v[i] = std::sqrt(v[i]);
    return v;
#endif
}

// rows[0..7] (8 values each) transposed in place: afterwards rows[k][r] is what rows[r][k] was.
// Unpack, shuffle and swap halves, as AVX transposes do (one instruction each where the target
// has them).
inline void transpose8(f32x8* rows) {
    typedef int i32x8 __attribute__((vector_size(32)));
    f32x8 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shuffle(rows[i], rows[i + 1], i32x8{0, 8, 1, 9, 4, 12, 5, 13});
        t[i + 1] = __builtin_shuffle(rows[i], rows[i + 1], i32x8{2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; j++) {
            u[i + 2 * j] = __builtin_shuffle(t[i + j], t[i + 2 + j], i32x8{0, 1, 8, 9, 4, 5, 12, 13});
            u[i + 2 * j + 1] = __builtin_shuffle(t[i + j], t[i + 2 + j], i32x8{2, 3, 10, 11, 6, 7, 14, 15});
        }
    for (int k = 0; k < 4; k++) {
        rows[k] = __builtin_shuffle(u[k], u[k + 4], i32x8{0, 1, 2, 3, 8, 9, 10, 11});
        rows[k + 4] = __builtin_shuffle(u[k], u[k + 4], i32x8{4, 5, 6, 7, 12, 13, 14, 15});
    }
}

// The same for eight rows of eight 16-bit values (bf16 bits, moved, never converted): pairs,
// then pairs of pairs, then halves interleaved.
inline void transpose8(u16x8* rows) {
    typedef unsigned u32x4 __attribute__((vector_size(16)));
    typedef unsigned long long u64x2 __attribute__((vector_size(16)));
    u16x8 t[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shuffle(rows[i], rows[i + 1], u16x8{0, 8, 1, 9, 2, 10, 3, 11});
        t[i + 1] = __builtin_shuffle(rows[i], rows[i + 1], u16x8{4, 12, 5, 13, 6, 14, 7, 15});
    }
    u32x4 u[8];
    for (int h = 0; h < 8; h += 4)
        for (int j = 0; j < 2; j++) {
            const u32x4 x = reinterpret_cast<u32x4>(t[h + j]), y = reinterpret_cast<u32x4>(t[h + 2 + j]);
            u[h + 2 * j] = __builtin_shuffle(x, y, u32x4{0, 4, 1, 5});
            u[h + 2 * j + 1] = __builtin_shuffle(x, y, u32x4{2, 6, 3, 7});
        }
    for (int m = 0; m < 4; m++) {
        const u64x2 x = reinterpret_cast<u64x2>(u[m]), y = reinterpret_cast<u64x2>(u[m + 4]);
        rows[2 * m] = reinterpret_cast<u16x8>(__builtin_shuffle(x, y, u64x2{0, 2}));
        rows[2 * m + 1] = reinterpret_cast<u16x8>(__builtin_shuffle(x, y, u64x2{1, 3}));
    }
}

// c + a * b rounded as a lane of the vector code above rounds it: fused where the target has FMA
// (where the compiler might otherwise split a scalar one into a multiply and an add), two
// roundings where it has none (std::fma would be a slow exact library call there).
inline float fma_as_vectors(float a, float b, float c) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
    return std::fma(a, b, c);
#else
    return c + a * b;
#endif
}

}  // namespace sixnd::cpu
