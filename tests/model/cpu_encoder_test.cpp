// Token + position embedding against float64, and its backward (with repeated tokens, so rows
// of dwte gather several positions) against central differences. FP32 tolerance 1e-6 (one
// add per element forward, a handful backward); BF16 5e-3 (one rounding of the result).
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

const int B = 3, T = 7, C = 19, V = 5;  // V < B*T: tokens repeat

std::vector<double> encoder_ref(const std::vector<int32_t>& inp, const std::vector<double>& wte,
                                const std::vector<double>& wpe) {
    std::vector<double> out(static_cast<size_t>(B) * T * C);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                out[(static_cast<size_t>(b) * T + t) * C + c] =
                    wte[static_cast<size_t>(inp[b * T + t]) * C + c] + wpe[static_cast<size_t>(t) * C + c];
    return out;
}

}  // namespace

TEST(CpuEncoder, ForwardMatchesFloat64) {
    auto inp = random_ints(B * T, 1, 0, V);
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto wte = round_to(dt, random_floats(static_cast<size_t>(V) * C, 2));
        auto wpe = round_to(dt, random_floats(static_cast<size_t>(T) * C, 3));
        XBuf wteb(dt, wte), wpeb(dt, wpe), out(dt, static_cast<size_t>(B) * T * C);
        ops->encoder_forward(out.ptr(), inp.data(), wteb.ptr(), wpeb.ptr(), B, T, C);
        EXPECT_LT(rel_error(out.values(), encoder_ref(inp, to_double(wte), to_double(wpe))),
                  dt == DType::f32 ? 1e-7 : 5e-3)
            << dtype_name(dt);
    }
}

TEST(CpuEncoder, BackwardMatchesFiniteDifferences) {
    auto inp = random_ints(B * T, 4, 0, V);
    auto wte = random_floats(static_cast<size_t>(V) * C, 5), wpe = random_floats(static_cast<size_t>(T) * C, 6);
    auto dout = random_floats(static_cast<size_t>(B) * T * C, 7);
    auto dwte0 = random_floats(wte.size(), 8), dwpe0 = random_floats(wpe.size(), 9);
    auto gte = numeric_grad(
        [&](const std::vector<double>& v) { return weighted_sum(encoder_ref(inp, v, to_double(wpe)), dout); },
        to_double(wte));
    auto gpe = numeric_grad(
        [&](const std::vector<double>& v) { return weighted_sum(encoder_ref(inp, to_double(wte), v), dout); },
        to_double(wpe));
    for (size_t i = 0; i < gte.size(); i++) gte[i] += dwte0[i];
    for (size_t i = 0; i < gpe.size(); i++) gpe[i] += dwpe0[i];
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        // In bf16 the inputs are rounded first; compare against the same rounded problem.
        auto d = round_to(dt, dout);
        XBuf doutb(dt, d), dwte(dt, round_to(dt, dwte0)), dwpe(dt, round_to(dt, dwpe0));
        ops->encoder_backward(dwte.ptr(), dwpe.ptr(), doutb.ptr(), inp.data(), B, T, C);
        EXPECT_LT(rel_error(dwte.values(), gte), dt == DType::f32 ? 1e-6 : 1e-2) << dtype_name(dt);
        EXPECT_LT(rel_error(dwpe.values(), gpe), dt == DType::f32 ? 1e-6 : 1e-2) << dtype_name(dt);
    }
}

// The scatter-add is owned per token row, so the bits do not depend on the thread count.
TEST(CpuEncoder, BackwardIsDeterministicAcrossThreadCounts) {
    const int Bb = 4, Tt = 64, Cc = 48;
    auto inp = random_ints(Bb * Tt, 10, 0, 11);
    auto dout = random_floats(static_cast<size_t>(Bb) * Tt * Cc, 11);
    HostMemory mem;
    auto ops = make_cpu_ops(DType::bf16, mem);
    XBuf doutb(DType::bf16, dout);
    std::vector<float> first_te, first_pe;
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        XBuf dwte(DType::bf16, static_cast<size_t>(11) * Cc), dwpe(DType::bf16, static_cast<size_t>(Tt) * Cc);
        ops->encoder_backward(dwte.ptr(), dwpe.ptr(), doutb.ptr(), inp.data(), Bb, Tt, Cc);
        if (threads == 1) {
            first_te = dwte.values();
            first_pe = dwpe.values();
        } else {
            EXPECT_EQ(dwte.values(), first_te) << threads << " threads";
            EXPECT_EQ(dwpe.values(), first_pe) << threads << " threads";
        }
    }
    omp_set_num_threads(saved);
}
