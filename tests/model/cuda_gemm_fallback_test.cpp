// The rule by which the CUDA matmul gives up cuBLASLt's fused GELU epilogue (model/cuda/
// gemm_fallback.h). Plain C++: runs without a GPU or the CUDA toolkit.
#include <gtest/gtest.h>

#include "model/cuda/gemm_fallback.h"

using namespace sixnd::cuda;

namespace {

const GemmFault kFaults[] = {GemmFault::aux_layout, GemmFault::descriptor, GemmFault::no_algorithm,
                             GemmFault::launch};

TEST(GemmFallback, FusedGeluFallsBackOnEveryFault) {
    for (GemmFault f : kFaults) EXPECT_EQ(gemm_next(true, f), GemmNext::unfused) << gemm_fault_name(f);
    EXPECT_EQ(gemm_next(true, GemmFault::none), GemmNext::go_on);
}

TEST(GemmFallback, PlainGemmFailsOnEveryFault) {
    for (GemmFault f : kFaults) EXPECT_EQ(gemm_next(false, f), GemmNext::fail) << gemm_fault_name(f);
    EXPECT_EQ(gemm_next(false, GemmFault::none), GemmNext::go_on);
}

TEST(GemmFallback, AuxLeadingDimensionFollowsCublasLtRule) {
    // The ops test's OC = 100 and other widths that are not multiples of 8 take the unfused path.
    for (long long ld : {1LL, 4LL, 12LL, 100LL, 3073LL, 50257LL}) EXPECT_FALSE(gelu_aux_layout_ok(ld, ld)) << ld;
    // GPT-2's MLP widths (4C) are multiples of 8.
    for (long long ld : {8LL, 192LL, 3072LL, 6400LL}) EXPECT_TRUE(gelu_aux_layout_ok(ld, ld)) << ld;
    // At least as many elements as D has rows.
    EXPECT_FALSE(gelu_aux_layout_ok(64, 72));
    EXPECT_TRUE(gelu_aux_layout_ok(72, 64));
}

TEST(GemmFallback, FaultNamesSaySomething) {
    for (GemmFault f : kFaults) EXPECT_GT(std::string(gemm_fault_name(f)).size(), 5u);
}

}  // namespace
