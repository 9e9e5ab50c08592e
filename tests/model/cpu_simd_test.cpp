// The eight-at-a-time bf16 conversions of model/cpu/simd.h (round8/store8, store16, widen8/load8), which
// every CPU kernel's bf16 loads and stores go through, against bf16's scalar ones bit for bit:
// every upper half (sign, exponent, mantissa) with the lower halves that decide rounding (zero,
// just below, at and just above the tie, all ones), NaNs of both signs with payloads in either
// half, infinities, zeros and denormals. The build's instruction set picks the vector code, so
// each build (native, x86-64-v3, the sanitizers' baseline) checks its own. Also the 8 x 8 transposes
// that the packed GEMM and CPU attention move blocks with.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "model/cpu/simd.h"

using namespace sixnd;
using namespace sixnd::cpu;

namespace {

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

std::vector<uint32_t> interesting_bits() {
    std::vector<uint32_t> bits;
    for (uint32_t hi = 0; hi < 0x10000u; hi++)
        for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) bits.push_back(hi << 16 | lo);
    for (uint32_t sign : {0u, 0x80000000u})
        for (uint32_t payload : {1u, 0x40u, 0x7fffu, 0x8000u, 0x10000u, 0x3fffffu, 0x400000u, 0x7fffffu})
            bits.push_back(sign | 0x7f800000u | payload);
    return bits;
}

}  // namespace

TEST(CpuSimd, Store8RoundsAsBf16FromFloat) {
    const std::vector<uint32_t> bits = interesting_bits();
    size_t mismatches = 0;
    for (size_t i = 0; i + 8 <= bits.size(); i += 8) {
        f32x8 v;
        for (int j = 0; j < 8; j++) v[j] = from_bits(bits[i + j]);
        bf16 out[8];
        store8(out, v);
        for (int j = 0; j < 8; j++) {
            const uint16_t want = bf16::from_float(from_bits(bits[i + j]));
            if (out[j].bits != want && mismatches++ < 10)
                ADD_FAILURE() << std::hex << "float bits 0x" << bits[i + j] << ": store8 gives 0x" << out[j].bits
                              << ", bf16::from_float 0x" << want;
        }
    }
    EXPECT_EQ(mismatches, 0u);
}

TEST(CpuSimd, Store16RoundsAsBf16FromFloatInOrder) {
    const std::vector<uint32_t> bits = interesting_bits();
    size_t mismatches = 0;
    for (size_t i = 0; i + 16 <= bits.size(); i += 16) {
        f32x8 lo, hi;
        for (int j = 0; j < 8; j++) lo[j] = from_bits(bits[i + j]), hi[j] = from_bits(bits[i + 8 + j]);
        bf16 out[16];
        store16(out, lo, hi);
        for (int j = 0; j < 16; j++) {
            const uint16_t want = bf16::from_float(from_bits(bits[i + j]));
            if (out[j].bits != want && mismatches++ < 10)
                ADD_FAILURE() << std::hex << "float bits 0x" << bits[i + j] << " (lane " << std::dec << j << std::hex
                              << "): store16 gives 0x" << out[j].bits << ", bf16::from_float 0x" << want;
        }
    }
    EXPECT_EQ(mismatches, 0u);
}

TEST(CpuSimd, Load8WidensExactly) {
    for (uint32_t h0 = 0; h0 < 0x10000u; h0 += 8) {
        bf16 in[8];
        for (int j = 0; j < 8; j++) in[j].bits = static_cast<uint16_t>(h0 + j);
        const f32x8 v = load8(in);
        for (int j = 0; j < 8; j++) {
            uint32_t got;
            const float x = v[j];
            std::memcpy(&got, &x, 4);
            ASSERT_EQ(got, (h0 + j) << 16) << "bf16 bits " << h0 + j;
        }
    }
}

// Both transposes move every value to its mirrored place, bits untouched: afterwards row k,
// lane r holds what row r, lane k held (distinct values, so a misplaced one cannot hide).
TEST(CpuSimd, TransposesMirrorEightByEight) {
    f32x8 f[8];
    u16x8 h[8];
    for (int r = 0; r < 8; r++)
        for (int k = 0; k < 8; k++) {
            f[r][k] = static_cast<float>(8 * r + k);
            h[r][k] = static_cast<unsigned short>(0xff00u + 8 * r + k);
        }
    transpose8(f);
    transpose8(h);
    for (int r = 0; r < 8; r++)
        for (int k = 0; k < 8; k++) {
            EXPECT_EQ(f[k][r], static_cast<float>(8 * r + k)) << "f32 row " << k << " lane " << r;
            EXPECT_EQ(h[k][r], 0xff00u + 8 * r + k) << "16-bit row " << k << " lane " << r;
        }
}
