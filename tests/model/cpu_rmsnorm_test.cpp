// RMSNorm against float64 (with a weight and without), and its backward against central
// differences of the float64 forward, onto random initial gradients (dinp and dweight
// accumulate). Tolerances: FP32 1e-5 relative; BF16 storage 1e-2 (one rounding of ~4e-3).
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

// w empty: scale 1.
std::vector<double> rmsnorm_ref(const std::vector<double>& x, const std::vector<double>& w, int N, int C,
                                std::vector<double>* rstd = nullptr) {
    std::vector<double> out(x.size());
    for (int n = 0; n < N; n++) {
        const double* xr = &x[static_cast<size_t>(n) * C];
        double ss = 0;
        for (int c = 0; c < C; c++) ss += xr[c] * xr[c];
        const double r = 1 / std::sqrt(ss / C + 1e-5);
        if (rstd) rstd->push_back(r);
        for (int c = 0; c < C; c++) out[static_cast<size_t>(n) * C + c] = xr[c] * r * (w.empty() ? 1.0 : w[c]);
    }
    return out;
}

}  // namespace

// Also rows of finite values whose squares overflow FP32 (past 1.8e19, scale 1e20): their
// output was 0 (rstd 0), finite and silent.
TEST(CpuRmsnorm, ForwardMatchesFloat64) {
    const int N = 13, C = 99;
    for (float scale : {1.0f, 1e20f}) {
        for (DType dt : {DType::f32, DType::bf16}) {
            for (bool weighted : {true, false}) {
                SCOPED_TRACE("scale " + std::to_string(scale));
                HostMemory mem;
                auto ops = make_cpu_ops(dt, mem);
                auto x = random_floats(static_cast<size_t>(N) * C, 1, -2.0f, 3.0f);
                for (float& v : x) v *= scale;
                x = round_to(dt, x);
                auto w = round_to(dt, random_floats(C, 2, 0.5f, 1.5f));
                std::vector<double> rstd_ref;
                auto ref = rmsnorm_ref(to_double(x), weighted ? to_double(w) : std::vector<double>{}, N, C, &rstd_ref);
                XBuf xb(dt, x), wb(dt, w), out(dt, x.size());
                std::vector<float> rstd(N);
                ops->rmsnorm_forward(out.ptr(), rstd.data(), xb.ptr(), weighted ? wb.ptr() : nullptr, N, C);
                EXPECT_LT(rel_error(out.values(), ref), dt == DType::f32 ? 1e-5 : 1e-2) << dtype_name(dt);
                EXPECT_LT(rel_error(rstd, rstd_ref), 1e-6) << dtype_name(dt);
            }
        }
    }
}

TEST(CpuRmsnorm, BackwardMatchesFiniteDifferences) {
    const int N = 5, C = 37;
    auto x = random_floats(static_cast<size_t>(N) * C, 11, -1.0f, 2.0f);
    auto w = random_floats(C, 12, 0.5f, 1.5f);
    auto dout = random_floats(x.size(), 14);
    auto dx0 = random_floats(x.size(), 15), dw0 = random_floats(C, 16);
    const auto xd = to_double(x), wd = to_double(w);
    for (bool weighted : {true, false}) {
        const std::vector<double> wref = weighted ? wd : std::vector<double>{};
        auto gx = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(rmsnorm_ref(v, wref, N, C), dout); },
                               xd);
        auto gw = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(rmsnorm_ref(xd, v, N, C), dout); },
                               wd);
        for (size_t i = 0; i < gx.size(); i++) gx[i] += dx0[i];
        for (int c = 0; c < C; c++) gw[c] += dw0[c];
        HostMemory mem;
        auto ops = make_cpu_ops(DType::f32, mem);
        std::vector<float> out(x.size()), rstd(N), dx = dx0, dw = dw0;
        const float* wp = weighted ? w.data() : nullptr;
        ops->rmsnorm_forward(out.data(), rstd.data(), x.data(), wp, N, C);
        ops->rmsnorm_backward(dx.data(), weighted ? dw.data() : nullptr, dout.data(), x.data(), wp, rstd.data(), N, C);
        EXPECT_LT(rel_error(dx, gx), 1e-5) << "weighted " << weighted;
        if (weighted) {
            EXPECT_LT(rel_error(dw, gw), 1e-5);
        }
    }
}

TEST(CpuRmsnorm, Bf16BackwardMatchesFp32) {
    const int N = 33, C = 96;
    const DType h = DType::bf16;
    auto x = round_to(h, random_floats(static_cast<size_t>(N) * C, 21, -1.0f, 2.0f));
    auto w = round_to(h, random_floats(C, 22, 0.5f, 1.5f));
    auto dout = round_to(h, random_floats(x.size(), 24));
    auto dx0 = round_to(h, random_floats(x.size(), 25));
    std::vector<std::vector<float>> res[2];
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf xb(dt, x), wb(dt, w), db(dt, dout), out(dt, x.size()), dx(dt, dx0), dw(dt, C);
        std::vector<float> rstd(N);
        ops->rmsnorm_forward(out.ptr(), rstd.data(), xb.ptr(), wb.ptr(), N, C);
        ops->rmsnorm_backward(dx.ptr(), dw.ptr(), db.ptr(), xb.ptr(), wb.ptr(), rstd.data(), N, C);
        res[dt == DType::bf16] = {out.values(), dx.values(), dw.values()};
    }
    for (int i = 0; i < 3; i++) EXPECT_LT(rel_error(res[1][i], res[0][i]), 1e-2) << "output " << i;
}
