// GELU, the residual add and the casts against float64 / exact expectations. GELU runs on a
// vectorised exp of ~2 ulp, so FP32 is held to 1e-6 relative; BF16 storage to 5e-3 (one
// rounding of each output).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/cpu/vec_math.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

double gelu_ref(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

std::vector<double> gelu_ref(const std::vector<double>& x) {
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); i++) y[i] = gelu_ref(x[i]);
    return y;
}

}  // namespace

// The vectorised exp under GELU and the softmaxes: a few ulp over the whole range it serves.
TEST(CpuExp, WithinFewUlpOfLibm) {
    double worst = 0;
    for (float x = -87.0f; x < 88.3f; x += 0.0137f) {
        const double ref = std::exp(static_cast<double>(x));
        worst = std::max(worst, std::fabs(cpu::exp_fast(x) - ref) / ref);
    }
    EXPECT_LT(worst, 4 * 6e-8);  // 4 ulp
    EXPECT_TRUE(std::isinf(cpu::exp_fast(89.0f)));
    EXPECT_TRUE(std::isinf(cpu::exp_fast(INFINITY)));
    EXPECT_LT(cpu::exp_fast(-INFINITY), 2e-38f);
    EXPECT_TRUE(std::isnan(cpu::exp_fast(NAN)));
}

TEST(CpuGelu, ForwardMatchesFloat64) {
    const size_t n = 1001;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto x = round_to(dt, random_floats(n, 1, -8.0f, 8.0f));
        XBuf xb(dt, x), out(dt, n);
        ops->gelu_forward(out.ptr(), xb.ptr(), n);
        auto got = out.values();
        auto ref = gelu_ref(to_double(x));
        EXPECT_LT(rel_error(got, ref), dt == DType::f32 ? 1e-6 : 5e-3) << dtype_name(dt);
        // Elementwise too: the far tails (x -> -inf gives -0, x -> +inf gives x) stay exact enough.
        double worst = 0;
        for (size_t i = 0; i < n; i++) worst = std::max(worst, std::fabs(got[i] - ref[i]) / (std::fabs(ref[i]) + 1e-3));
        EXPECT_LT(worst, dt == DType::f32 ? 1e-5 : 1e-2) << dtype_name(dt);
    }
}

TEST(CpuGelu, ExtremesAndNaN) {
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> x = {-1e30f, -200.0f, 0.0f, 200.0f, 1e30f, NAN}, out(x.size());
    ops->gelu_forward(out.data(), x.data(), x.size());
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 200.0f);
    EXPECT_EQ(out[4], 1e30f);
    EXPECT_TRUE(std::isnan(out[5]));
}

TEST(CpuGelu, BackwardMatchesFiniteDifferencesInPlace) {
    const size_t n = 517;
    auto x = random_floats(n, 2, -5.0f, 5.0f);
    auto dout = random_floats(n, 3);
    auto g = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(gelu_ref(v), dout); }, to_double(x));
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf xb(dt, x), d(dt, dout);
        ops->gelu_backward(d.ptr(), xb.ptr(), d.ptr(), n);  // dinp aliases dout, as the model uses it
        EXPECT_LT(rel_error(d.values(), g), dt == DType::f32 ? 1e-5 : 1e-2) << dtype_name(dt);
    }
}

// GELU's slope is 1 far right and 0 far left, whatever the size: x^2 in its polynomial term
// overflowed above ~1.8e19 and made the gradient NaN (0 * inf), which PyTorch's is not.
TEST(CpuGelu, BackwardIsFiniteAtHugeInputs) {
    const std::vector<float> x = {3e19f, -3e19f, 1e38f, -1e38f, 20.5f, -20.5f};
    const std::vector<double> want = {1, 0, 1, 0, 1, 0};
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf xb(dt, x), d(dt, std::vector<float>(x.size(), 1.0f));
        ops->gelu_backward(d.ptr(), xb.ptr(), d.ptr(), x.size());
        const auto got = d.values();
        for (size_t i = 0; i < x.size(); i++) EXPECT_EQ(got[i], want[i]) << dtype_name(dt) << " x = " << x[i];
    }
}

TEST(CpuResidual, ForwardMatchesFloat64) {
    const size_t n = 333;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto a = round_to(dt, random_floats(n, 4)), b = round_to(dt, random_floats(n, 5));
        std::vector<double> ref(n);
        for (size_t i = 0; i < n; i++) ref[i] = static_cast<double>(a[i]) + b[i];
        XBuf ab(dt, a), bb(dt, b), out(dt, n);
        ops->residual_forward(out.ptr(), ab.ptr(), bb.ptr(), n);
        EXPECT_LT(rel_error(out.values(), ref), dt == DType::f32 ? 1e-7 : 5e-3) << dtype_name(dt);
    }
}

TEST(CpuCast, RoundsToNearestEvenAndCopies) {
    const size_t n = 1000;
    auto x = random_floats(n, 6, -100.0f, 100.0f);
    x.push_back(INFINITY);
    x.push_back(NAN);
    HostMemory mem;
    auto ops = make_cpu_ops(DType::bf16, mem);
    std::vector<bf16> h(x.size());
    ops->cast(h.data(), DType::bf16, x.data(), DType::f32, x.size());
    for (size_t i = 0; i < x.size(); i++) EXPECT_EQ(h[i].bits, bf16(x[i]).bits) << i;
    std::vector<float> back(x.size());
    ops->cast(back.data(), DType::f32, h.data(), DType::bf16, x.size());
    for (size_t i = 0; i < n; i++) EXPECT_EQ(back[i], static_cast<float>(h[i])) << i;
    std::vector<float> copy(x.size());
    ops->cast(copy.data(), DType::f32, x.data(), DType::f32, n);
    for (size_t i = 0; i < n; i++) EXPECT_EQ(copy[i], x[i]);
    std::vector<bf16> hcopy(x.size());
    ops->cast(hcopy.data(), DType::bf16, h.data(), DType::bf16, x.size());
    for (size_t i = 0; i < x.size(); i++) EXPECT_EQ(hcopy[i].bits, h[i].bits);
}
