// QK-norm against float64 (each q and k head vector RMS-normalised, v copied) for multi-head
// and grouped-query rows, and its backward against central differences of the float64 forward.
// Tolerances: FP32 1e-5 relative; BF16 storage 1e-2.
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
    int N, NH, NKV, hs;
    int C() const { return NH * hs; }
    int W() const { return C() + 2 * NKV * hs; }
    size_t size() const { return static_cast<size_t>(N) * W(); }
};

std::vector<double> qk_norm_ref(const std::vector<double>& x, const Shape& s, std::vector<double>* rstd = nullptr) {
    std::vector<double> out = x;
    for (int n = 0; n < s.N; n++)
        for (int j = 0; j < s.NH + s.NKV; j++) {
            const size_t off = static_cast<size_t>(n) * s.W() + static_cast<size_t>(j) * s.hs;
            double ss = 0;
            for (int i = 0; i < s.hs; i++) ss += x[off + i] * x[off + i];
            const double r = 1 / std::sqrt(ss / s.hs + 1e-5);
            if (rstd) rstd->push_back(r);
            for (int i = 0; i < s.hs; i++) out[off + i] = x[off + i] * r;
        }
    return out;
}

}  // namespace

// Also head vectors of finite values whose squares overflow FP32 (past 1.8e19, scale 1e20): their
// rstd was 0 and their output 0, finite and silent.
TEST(CpuQkNorm, ForwardMatchesFloat64) {
    for (float scale : {1.0f, 1e20f}) {
        for (const Shape& s : {Shape{7, 3, 3, 16}, Shape{5, 4, 2, 12}, Shape{6, 4, 1, 8}}) {
            for (DType dt : {DType::f32, DType::bf16}) {
                SCOPED_TRACE("scale " + std::to_string(scale));
                HostMemory mem;
                auto ops = make_cpu_ops(dt, mem);
                auto x = random_floats(s.size(), 1, -2.0f, 3.0f);
                for (float& v : x) v *= scale;
                x = round_to(dt, x);
                std::vector<double> rstd_ref;
                auto ref = qk_norm_ref(to_double(x), s, &rstd_ref);
                XBuf xb(dt, x), out(dt, x.size());
                std::vector<float> rstd(static_cast<size_t>(s.N) * (s.NH + s.NKV));
                ops->qk_norm_forward(out.ptr(), rstd.data(), xb.ptr(), s.N, s.C(), s.NH, s.NKV);
                EXPECT_LT(rel_error(out.values(), ref), dt == DType::f32 ? 1e-5 : 1e-2) << dtype_name(dt) << " NKV " << s.NKV;
                EXPECT_LT(rel_error(rstd, rstd_ref), 1e-6) << dtype_name(dt);
            }
        }
    }
}

TEST(CpuQkNorm, BackwardMatchesFiniteDifferences) {
    for (const Shape& s : {Shape{3, 3, 3, 8}, Shape{3, 4, 2, 6}, Shape{2, 4, 1, 8}}) {
        auto x = random_floats(s.size(), 11, -1.0f, 2.0f);
        auto dout = random_floats(x.size(), 14);
        auto g = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(qk_norm_ref(v, s), dout); },
                              to_double(x));
        HostMemory mem;
        auto ops = make_cpu_ops(DType::f32, mem);
        std::vector<float> out(x.size()), rstd(static_cast<size_t>(s.N) * (s.NH + s.NKV)), dx(x.size(), 7.0f);
        ops->qk_norm_forward(out.data(), rstd.data(), x.data(), s.N, s.C(), s.NH, s.NKV);
        ops->qk_norm_backward(dx.data(), dout.data(), x.data(), rstd.data(), s.N, s.C(), s.NH, s.NKV);
        EXPECT_LT(rel_error(dx, g), 1e-5) << "NKV " << s.NKV;
    }
}

TEST(CpuQkNorm, Bf16BackwardMatchesFp32) {
    const Shape s{33, 4, 2, 32};
    const DType h = DType::bf16;
    auto x = round_to(h, random_floats(s.size(), 21, -1.0f, 2.0f));
    auto dout = round_to(h, random_floats(x.size(), 24));
    std::vector<std::vector<float>> res[2];
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf xb(dt, x), db(dt, dout), out(dt, x.size()), dx(dt, x.size());
        std::vector<float> rstd(static_cast<size_t>(s.N) * (s.NH + s.NKV));
        ops->qk_norm_forward(out.ptr(), rstd.data(), xb.ptr(), s.N, s.C(), s.NH, s.NKV);
        ops->qk_norm_backward(dx.ptr(), db.ptr(), xb.ptr(), rstd.data(), s.N, s.C(), s.NH, s.NKV);
        res[dt == DType::bf16] = {out.values(), dx.values()};
    }
    for (int i = 0; i < 2; i++) EXPECT_LT(rel_error(res[1][i], res[0][i]), 1e-2) << "output " << i;
}
