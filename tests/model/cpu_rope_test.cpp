// Rotary embedding against float64 (rotate-half pairs (i, i + hs/2), angle t * theta^(-2i/hs),
// on q and k heads only, v untouched), for multi-head and grouped-query rows and B > 1 (the
// position restarts per sequence); backward against central differences of the float64
// forward (it is linear, so this checks that backward is its transpose). Also: forward then
// backward is the identity, and the rotation keeps each pair's norm. Tolerances: FP32 1e-6
// relative (T up to 300: the angles are taken in double); BF16 storage 1e-2. Rows may start at
// a later position (pos0), as a decoder's one new row does.
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

struct Shape {
    int B, T, NH, NKV, hs;
    double theta;
    int C() const { return NH * hs; }
    int W() const { return C() + 2 * NKV * hs; }
    size_t size() const { return static_cast<size_t>(B) * T * W(); }
};

std::vector<double> rope_ref(const std::vector<double>& x, const Shape& s, int pos0 = 0) {
    std::vector<double> out = x;
    const int half = s.hs / 2;
    for (int b = 0; b < s.B; b++)
        for (int t = 0; t < s.T; t++)
            for (int j = 0; j < s.NH + s.NKV; j++) {
                const size_t off = (static_cast<size_t>(b) * s.T + t) * s.W() + static_cast<size_t>(j) * s.hs;
                for (int i = 0; i < half; i++) {
                    const double a = (pos0 + t) / std::pow(s.theta, 2.0 * i / s.hs);
                    const double x1 = x[off + i], x2 = x[off + i + half];
                    out[off + i] = x1 * std::cos(a) - x2 * std::sin(a);
                    out[off + i + half] = x2 * std::cos(a) + x1 * std::sin(a);
                }
            }
    return out;
}

}  // namespace

TEST(CpuRope, ForwardMatchesFloat64) {
    for (const Shape& s : {Shape{2, 9, 3, 3, 16, 10000.0}, Shape{1, 300, 4, 2, 8, 10000.0}, Shape{2, 5, 4, 1, 6, 500.0}}) {
        for (DType dt : {DType::f32, DType::bf16}) {
            HostMemory mem;
            auto ops = make_cpu_ops(dt, mem);
            auto x = round_to(dt, random_floats(s.size(), 1, -2.0f, 2.0f));
            auto ref = rope_ref(to_double(x), s);
            XBuf xb(dt, x);
            ops->rope_forward(xb.ptr(), s.B, s.T, s.C(), s.NH, s.NKV, static_cast<float>(s.theta), 0);
            EXPECT_LT(rel_error(xb.values(), ref), dt == DType::f32 ? 1e-6 : 1e-2) << dtype_name(dt) << " T " << s.T;
            // v untouched, bit for bit
            const auto got = xb.values();
            for (int n = 0; n < s.B * s.T; n++)
                for (int i = (s.NH + s.NKV) * s.hs; i < s.W(); i++)
                    ASSERT_EQ(got[static_cast<size_t>(n) * s.W() + i], x[static_cast<size_t>(n) * s.W() + i]);
        }
    }
}

// A decoder turns its one new row at its own place: rows at pos0 + t, each sequence of B alike.
TEST(CpuRope, ForwardAtAnOffsetPosition) {
    for (int pos0 : {1, 257, 4095}) {
        const Shape s{2, 3, 4, 2, 16, 10000.0};
        for (DType dt : {DType::f32, DType::bf16}) {
            HostMemory mem;
            auto ops = make_cpu_ops(dt, mem);
            auto x = round_to(dt, random_floats(s.size(), 5, -2.0f, 2.0f));
            XBuf xb(dt, x);
            ops->rope_forward(xb.ptr(), s.B, s.T, s.C(), s.NH, s.NKV, static_cast<float>(s.theta), pos0);
            EXPECT_LT(rel_error(xb.values(), rope_ref(to_double(x), s, pos0)), dt == DType::f32 ? 1e-6 : 1e-2)
                << dtype_name(dt) << " pos0 " << pos0;
        }
    }
}

TEST(CpuRope, BackwardMatchesFiniteDifferences) {
    const Shape s{2, 7, 4, 2, 8, 10000.0};
    auto x = random_floats(s.size(), 11);
    auto dout = random_floats(x.size(), 14);
    auto g = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(rope_ref(v, s), dout); }, to_double(x));
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> d = dout;
    ops->rope_backward(d.data(), s.B, s.T, s.C(), s.NH, s.NKV, static_cast<float>(s.theta));
    EXPECT_LT(rel_error(d, g), 1e-6);
}

TEST(CpuRope, BackwardUndoesForward) {
    const Shape s{2, 40, 4, 2, 16, 10000.0};
    auto x = random_floats(s.size(), 3);
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> y = x;
    ops->rope_forward(y.data(), s.B, s.T, s.C(), s.NH, s.NKV, 10000.0f, 0);
    EXPECT_GT(rel_error(y, x), 0.1);  // it did turn something
    ops->rope_backward(y.data(), s.B, s.T, s.C(), s.NH, s.NKV, 10000.0f);
    EXPECT_LT(rel_error(y, x), 1e-6);
}
