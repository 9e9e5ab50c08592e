// SIXND_CPU_ISA applied to features as detected (apply_isa_cap): each kind clears what it lacks,
// and a kind above the CPU, which would run the CPU's own path under another's name, is refused
// with one error naming SIXND_CPU_ISA, as an unknown kind is.
#include <gtest/gtest.h>

#include <string>

#include "core/cpu_features.h"
#include "core/error.h"

using namespace sixnd;

namespace {

CpuFeatures with(bool avx2, bool avx512f, bool avx512_bf16, bool amx_bf16) {
    CpuFeatures f;
    f.avx2 = f.fma = avx2;
    f.avx512f = avx512f;
    f.avx512_bf16 = avx512_bf16;
    f.amx_bf16 = amx_bf16;
    return f;
}

// The error apply_isa_cap throws, or "" where it takes the cap.
std::string refusal(CpuFeatures f, const std::string& cap) {
    try {
        apply_isa_cap(f, cap);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(CpuIsaCap, EachKindClearsWhatItLacks) {
    CpuFeatures f = with(true, true, true, true);
    apply_isa_cap(f, "avx512_core");
    EXPECT_TRUE(f.avx512f);
    EXPECT_FALSE(f.avx512_bf16 || f.amx_bf16);
    EXPECT_EQ(f.isa_cap, "avx512_core");
    f = with(true, true, true, true);
    apply_isa_cap(f, "avx2");
    EXPECT_TRUE(f.avx2 && f.fma);
    EXPECT_FALSE(f.avx512f || f.avx512_bf16 || f.amx_bf16);
    f = with(true, true, true, false);
    apply_isa_cap(f, "native");
    EXPECT_TRUE(f.avx512_bf16);
    EXPECT_EQ(f.isa_cap, "native");
}

TEST(CpuIsaCap, AKindAboveTheCpuIsRefused) {
    const std::string above = refusal(with(true, false, false, false), "avx512_core");
    EXPECT_NE(above.find("SIXND_CPU_ISA"), std::string::npos) << above;
    EXPECT_NE(above.find("AVX-512"), std::string::npos) << above;
    EXPECT_EQ(above.find('\n'), std::string::npos) << above;
    EXPECT_NE(refusal(with(false, false, false, false), "avx2").find("AVX2"), std::string::npos);
    EXPECT_EQ(refusal(with(true, false, false, false), "avx2"), "");
    EXPECT_EQ(refusal(with(true, true, false, false), "avx512_core"), "");
    EXPECT_EQ(refusal(with(false, false, false, false), "native"), "");
    EXPECT_NE(refusal(with(true, true, true, true), "avx3").find("unknown value 'avx3'"), std::string::npos);
}
