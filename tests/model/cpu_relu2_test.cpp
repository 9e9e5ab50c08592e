// ReLU^2 against float64 (including exact zeros and negative inputs), its backward against
// central differences away from the kink at 0, in-place backward (dinp aliasing dout), and NaN
// passing through. Tolerances: FP32 1e-6 relative; BF16 storage 1e-2.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

std::vector<double> relu2_ref(const std::vector<double>& x) {
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); i++) out[i] = x[i] > 0 ? x[i] * x[i] : 0.0;
    return out;
}

}  // namespace

TEST(CpuRelu2, ForwardMatchesFloat64) {
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto x = round_to(dt, random_floats(1000, 1, -3.0f, 3.0f));
        x[0] = 0.0f;
        auto ref = relu2_ref(to_double(x));
        XBuf xb(dt, x), out(dt, x.size());
        ops->relu2_forward(out.ptr(), xb.ptr(), x.size());
        EXPECT_LT(rel_error(out.values(), ref), dt == DType::f32 ? 1e-6 : 1e-2) << dtype_name(dt);
    }
}

TEST(CpuRelu2, BackwardMatchesFiniteDifferencesInPlace) {
    auto x = random_floats(300, 11, -3.0f, 3.0f);
    for (float& v : x)
        if (std::fabs(v) < 1e-3f) v = 0.5f;  // the central difference straddles no kink
    auto dout = random_floats(x.size(), 14);
    auto g = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(relu2_ref(v), dout); }, to_double(x));
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> d = dout;
    ops->relu2_backward(d.data(), x.data(), d.data(), x.size());
    EXPECT_LT(rel_error(d, g), 1e-6);
}

TEST(CpuRelu2, NanPassesThrough) {
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> x{NAN, -1.0f, 2.0f}, out(3);
    ops->relu2_forward(out.data(), x.data(), 3);
    EXPECT_TRUE(std::isnan(out[0]));
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_EQ(out[2], 4.0f);
}
