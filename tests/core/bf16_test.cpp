#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/bf16.h"

using sixnd::bf16;

TEST(Bf16, ExactValuesRoundTrip) {
    for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 65280.0f}) EXPECT_EQ(static_cast<float>(bf16(f)), f);
}

TEST(Bf16, RoundsToNearestEven) {
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
    EXPECT_EQ(static_cast<float>(bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
    // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
    EXPECT_EQ(static_cast<float>(bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
    // Just above halfway rounds up.
    EXPECT_EQ(static_cast<float>(bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20))),
              1.0f + std::ldexp(1.0f, -7));
}

TEST(Bf16, NanAndInfPreserved) {
    float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(static_cast<float>(bf16(inf)), inf);
    EXPECT_EQ(static_cast<float>(bf16(-inf)), -inf);
    EXPECT_TRUE(std::isnan(static_cast<float>(bf16(std::numeric_limits<float>::quiet_NaN()))));
    // A NaN whose payload lives only in the low bits must not round to Inf.
    uint32_t bits = 0x7f800001u;
    float snan;
    std::memcpy(&snan, &bits, 4);
    EXPECT_TRUE(std::isnan(static_cast<float>(bf16(snan))));
    // The largest finite float rounds to Inf, as RNE requires.
    EXPECT_EQ(static_cast<float>(bf16(std::numeric_limits<float>::max())), inf);
}
