// AdamW against a float64 reference over several steps (master weights on/off, weight decay
// on/off, a grad_scale), the bf16 stall that master weights prevent, the non-finite flag of
// AdamW and Muon's update, and sum_squares against float64, across thread counts and for values
// whose squares overflow a float. FP32 tolerance 1e-6 relative (a few FP32 operations per
// element per step); bf16 parameters are compared after the same per-step rounding, to 1e-3
// (a rare tie broken differently costs one bf16 ulp on one element).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

struct AdamState {
    std::vector<double> p, m, v;
};

// One step in double. store_bf16: the parameter is held in bf16 (no master copy), so it is
// rounded after every step.
void adamw_ref(AdamState& s, const std::vector<float>& g, const AdamWArgs& a, bool store_bf16) {
    for (size_t i = 0; i < s.p.size(); i++) {
        const double gi = static_cast<double>(g[i]) * a.grad_scale;
        s.m[i] = a.beta1 * s.m[i] + (1 - a.beta1) * gi;
        s.v[i] = a.beta2 * s.v[i] + (1 - a.beta2) * gi * gi;
        const double mh = s.m[i] / (1 - std::pow(static_cast<double>(a.beta1), a.step));
        const double vh = s.v[i] / (1 - std::pow(static_cast<double>(a.beta2), a.step));
        s.p[i] -= a.lr * (mh / (std::sqrt(vh) + a.eps) + a.weight_decay * s.p[i]);
        if (store_bf16) s.p[i] = static_cast<float>(bf16(static_cast<float>(s.p[i])));
    }
}

}  // namespace

TEST(CpuAdamW, MatchesFloat64OverSteps) {
    const size_t n = 1003;
    for (DType dt : {DType::f32, DType::bf16})
        for (bool master : {true, false})
            for (float wd : {0.0f, 0.1f}) {
                HostMemory mem;
                auto ops = make_cpu_ops(dt, mem);
                auto p0 = round_to(dt, random_floats(n, 1));
                XBuf params(dt, p0);
                std::vector<float> mw(p0), m(n, 0.0f), v(n, 0.0f);
                AdamState ref{to_double(p0), std::vector<double>(n), std::vector<double>(n)};
                AdamWArgs a;
                a.lr = 1e-2f;
                a.weight_decay = wd;
                a.grad_scale = 0.5f;
                for (int step = 1; step <= 4; step++) {
                    a.step = step;
                    auto g = round_to(dt, random_floats(n, 10 + step));
                    XBuf gb(dt, g);
                    ops->adamw(params.ptr(), master ? mw.data() : nullptr, gb.ptr(), m.data(), v.data(), n, a);
                    adamw_ref(ref, g, a, dt == DType::bf16 && !master);
                }
                const std::string what =
                    std::string(dtype_name(dt)) + (master ? " master" : " no master") + " wd " + std::to_string(wd);
                EXPECT_LT(rel_error(m, ref.m), 1e-6) << what;
                EXPECT_LT(rel_error(v, ref.v), 1e-6) << what;
                if (master) {
                    EXPECT_LT(rel_error(mw, ref.p), 1e-6) << what;
                    EXPECT_EQ(params.values(), round_to(dt, mw)) << what;  // params = round(master)
                } else {
                    EXPECT_LT(rel_error(params.values(), ref.p), dt == DType::f32 ? 1e-6 : 1e-3) << what;
                }
            }
}

// BF16 runs the same update as FP32, whichever of its code paths (blocks of 16, the loop for the
// rest) an element takes: on the same gradients its master weights and moments are FP32's bit
// for bit, and without master weights its parameters are FP32's rounded after every step. Sizes
// with and without a tail, on one thread and in parallel.
TEST(CpuAdamW, Bf16UpdateIsFp32sBitForBit) {
    HostMemory mem;
    auto f32 = make_cpu_ops(DType::f32, mem);
    auto b16 = make_cpu_ops(DType::bf16, mem);
    for (size_t n : {size_t(5), size_t(16), size_t(1003), size_t(200005)})
        for (bool master : {true, false}) {
            const auto p0 = round_to(DType::bf16, random_floats(n, 2));
            std::vector<float> p32(p0), m32(n), v32(n), mw(p0), m16(n), v16(n);
            XBuf p16(DType::bf16, p0);
            AdamWArgs a;
            a.lr = 1e-2f;
            a.weight_decay = 0.1f;
            a.grad_scale = 0.5f;
            for (int step = 1; step <= 3; step++) {
                a.step = step;
                const auto g = round_to(DType::bf16, random_floats(n, 20 + step, -2.0f, 2.0f));
                XBuf g32(DType::f32, g), g16(DType::bf16, g);
                f32->adamw(p32.data(), nullptr, g32.ptr(), m32.data(), v32.data(), n, a);
                if (!master) p32 = round_to(DType::bf16, p32);
                b16->adamw(p16.ptr(), master ? mw.data() : nullptr, g16.ptr(), m16.data(), v16.data(), n, a);
            }
            const std::string what = "n " + std::to_string(n) + (master ? " master" : " no master");
            EXPECT_EQ(m16, m32) << what;
            EXPECT_EQ(v16, v32) << what;
            if (master) {
                EXPECT_EQ(mw, p32) << what;
            }
            EXPECT_EQ(p16.values(), round_to(DType::bf16, p32)) << what;
        }
}

// Updates below half a bf16 ulp vanish without master weights and accumulate with them.
TEST(CpuAdamW, Bf16UpdatesStallWithoutMasterWeights) {
    const size_t n = 64;
    HostMemory mem;
    auto ops = make_cpu_ops(DType::bf16, mem);
    const std::vector<float> p0(n, 1.0f);  // bf16 ulp at 1 is 2^-7
    XBuf without(DType::bf16, p0), with(DType::bf16, p0), g(DType::bf16, std::vector<float>(n, 1.0f));
    std::vector<float> master(p0), m1(n), v1(n), m2(n), v2(n);
    AdamWArgs a;
    a.lr = 1e-3f;  // each step moves p by ~1e-3, below half an ulp (3.9e-3)
    for (int step = 1; step <= 20; step++) {
        a.step = step;
        ops->adamw(without.ptr(), nullptr, g.ptr(), m1.data(), v1.data(), n, a);
        ops->adamw(with.ptr(), master.data(), g.ptr(), m2.data(), v2.data(), n, a);
    }
    EXPECT_EQ(without.values(), p0);
    EXPECT_NEAR(master[0], 1.0f - 20 * 1e-3f, 1e-4f);
    EXPECT_LT(with.values()[0], 0.99f);
}

// Sixteen values per lane are summed in float before the lanes' sums are double (reduce.cpp):
// at most 16 float roundings of the total, below 1e-6 of it.
TEST(CpuSumSquares, MatchesFloat64AndIgnoresThreadCount) {
    const size_t n = 100003;  // not a multiple of any chunk
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto x = round_to(dt, random_floats(n, 3, -3.0f, 3.0f));
        double ref = 0;
        for (float v : x) ref += static_cast<double>(v) * v;
        XBuf xb(dt, x);
        const int saved = omp_get_max_threads();
        omp_set_num_threads(1);
        const double one = ops->sum_squares(xb.ptr(), n);
        omp_set_num_threads(3);
        const double three = ops->sum_squares(xb.ptr(), n);
        omp_set_num_threads(saved);
        EXPECT_NEAR(one, ref, 1e-6 * ref) << dtype_name(dt);
        EXPECT_EQ(one, three) << dtype_name(dt);
        EXPECT_EQ(ops->sum_squares(xb.ptr(), 0), 0.0);
    }
}

// A finite value whose square overflows a float (3e19: 9e38) is summed as the double it is, in
// a chunk's float-summed blocks as in its tail, so that a huge but finite gradient gives a finite
// norm (the trainer clips it rather than skipping the step as non-finite); an infinity or a NaN
// among the values still makes the sum non-finite.
TEST(CpuSumSquares, HugeFiniteValuesGiveAFiniteSum) {
    const size_t n = 20000;  // three chunks, the last with a tail outside the float blocks
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        for (size_t at : {size_t(5), size_t(9000), n - 3}) {
            auto x = round_to(dt, random_floats(n, 4, -1.0f, 1.0f));
            x[at] = round_to(dt, {3e19f})[0];
            double ref = 0;
            for (float v : x) ref += static_cast<double>(v) * v;
            EXPECT_NEAR(ops->sum_squares(XBuf(dt, x).ptr(), n), ref, 1e-6 * ref) << dtype_name(dt) << " at " << at;
            x[at] = std::numeric_limits<float>::infinity();
            EXPECT_EQ(ops->sum_squares(XBuf(dt, x).ptr(), n), std::numeric_limits<double>::infinity());
            x[at] = std::numeric_limits<float>::quiet_NaN();
            EXPECT_TRUE(std::isnan(ops->sum_squares(XBuf(dt, x).ptr(), n)));
        }
    }
}

// take_nonfinite_update: a stored parameter that is not finite is flagged by the update that
// stores it, in either place of a 1003-value update (the AVX2 build's blocks of 16, or the tail),
// and the flag clears when read. A master weight of 0x1.FFp127 is finite, but rounds to
// infinity in bf16 storage; a NaN gradient makes every kind of parameter NaN.
TEST(CpuAdamW, FlagsTheNonFiniteParametersItStores) {
    const size_t n = 1003;
    for (DType dt : {DType::f32, DType::bf16})
        for (bool master : {true, false})
            for (size_t k : {size_t(5), n - 2}) {
                SCOPED_TRACE(std::string(dtype_name(dt)) + (master ? " master" : "") + " at " + std::to_string(k));
                HostMemory mem;
                auto ops = make_cpu_ops(dt, mem);
                auto p0 = round_to(dt, random_floats(n, 1));
                XBuf params(dt, p0);
                std::vector<float> mw(p0), m(n, 0.0f), v(n, 0.0f);
                AdamWArgs a;
                a.lr = 1e-2f;
                a.step = 1;
                XBuf g(dt, round_to(dt, random_floats(n, 2)));
                ops->adamw(params.ptr(), master ? mw.data() : nullptr, g.ptr(), m.data(), v.data(), n, a);
                EXPECT_FALSE(ops->take_nonfinite_update());

                // lr 0: the update stores the parameter as it is.
                a.lr = 0;
                a.step = 2;
                XBuf zero(dt, n);
                if (master) {
                    mw[k] = 0x1.FFp127f;
                    ops->adamw(params.ptr(), mw.data(), zero.ptr(), m.data(), v.data(), n, a);
                    EXPECT_EQ(ops->take_nonfinite_update(), dt == DType::bf16);
                    mw[k] = 0x1.FEp127f;  // bf16's largest finite value
                    ops->adamw(params.ptr(), mw.data(), zero.ptr(), m.data(), v.data(), n, a);
                    EXPECT_FALSE(ops->take_nonfinite_update());
                }
                std::vector<float> gv(n, 0.0f);
                gv[k] = std::nanf("");
                XBuf nan_grad(dt, gv);
                a.lr = 1e-2f;
                a.step = 3;
                ops->adamw(params.ptr(), master ? mw.data() : nullptr, nan_grad.ptr(), m.data(), v.data(), n, a);
                EXPECT_TRUE(ops->take_nonfinite_update());
                EXPECT_FALSE(ops->take_nonfinite_update()) << "the flag clears when read";
            }
}

TEST(CpuMuon, ApplyFlagsTheNonFiniteParametersItStores) {
    const size_t n = 1003;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto p0 = round_to(dt, random_floats(n, 1));
        XBuf params(dt, p0);
        std::vector<float> update = random_floats(n, 3);
        ops->muon_apply(params.ptr(), nullptr, update.data(), n, 0.02f, 1.0f, 0.0f);
        EXPECT_FALSE(ops->take_nonfinite_update()) << dtype_name(dt);
        update[n / 2] = std::numeric_limits<float>::infinity();
        ops->muon_apply(params.ptr(), nullptr, update.data(), n, 0.02f, 1.0f, 0.0f);
        EXPECT_TRUE(ops->take_nonfinite_update()) << dtype_name(dt);
        EXPECT_FALSE(ops->take_nonfinite_update()) << dtype_name(dt);
    }
}
