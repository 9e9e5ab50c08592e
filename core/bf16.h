// bf16: the upper 16 bits of an IEEE float32. Conversion from float rounds to nearest,
// ties to even; NaN stays NaN (quiet bit forced so rounding can never turn it into Inf),
// and +-Inf stays Inf. Conversion to float is exact.
#pragma once
#include <cstdint>
#include <cstring>

namespace sixnd {

struct bf16 {
    uint16_t bits = 0;

    bf16() = default;
    explicit bf16(float f) : bits(from_float(f)) {}
    explicit operator float() const { return to_float(bits); }

    // Branch-free, and NaN tested as f != f: vectorised (the kernels' rounding loops), that is one
    // float compare, where testing the bits is an unsigned compare, three instructions without AVX-512.
    static uint16_t from_float(float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        const uint32_t quiet = (u >> 16) | 0x0040u;
        return static_cast<uint16_t>(f != f ? quiet : rounded);
    }
    static float to_float(uint16_t b) {
        uint32_t u = static_cast<uint32_t>(b) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};
static_assert(sizeof(bf16) == 2, "bf16 must be two bytes");

inline float to_f32(float x) { return x; }
inline float to_f32(bf16 x) { return static_cast<float>(x); }

// Store a float as T: identity for float, RNE for bf16.
template <typename T> inline T from_f32(float x);
template <> inline float from_f32<float>(float x) { return x; }
template <> inline bf16 from_f32<bf16>(float x) { return bf16(x); }

}  // namespace sixnd
