// LayerNorm (plain and fused with the residual add) against float64, and its backward against
// central differences of the float64 forward. Tolerances: FP32 1e-5 relative (two-pass FP32
// statistics over C ~ 100 values); BF16 storage 1e-2 (one or two bf16 roundings of ~1e-3 each
// on outputs of order 1).
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

struct LnRef {
    std::vector<double> out, mean, rstd;
};

LnRef layernorm_ref(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b, int N,
                    int C) {
    LnRef r{std::vector<double>(x.size()), std::vector<double>(N), std::vector<double>(N)};
    for (int n = 0; n < N; n++) {
        const double* xr = &x[static_cast<size_t>(n) * C];
        double m = 0, v = 0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
        v /= C;
        const double s = 1 / std::sqrt(v + 1e-5);
        for (int c = 0; c < C; c++) r.out[static_cast<size_t>(n) * C + c] = (xr[c] - m) * s * w[c] + b[c];
        r.mean[n] = m;
        r.rstd[n] = s;
    }
    return r;
}

double tol(DType dt) { return dt == DType::f32 ? 1e-5 : 1e-2; }

}  // namespace

// Also rows of finite values whose squares overflow FP32 (|x - mean| past 1.8e19, scale 1e20):
// their output was the bias alone (rstd 0), finite and silent.
TEST(CpuLayernorm, ForwardMatchesFloat64) {
    const int N = 13, C = 99;
    for (float scale : {1.0f, 1e20f}) {
        for (DType dt : {DType::f32, DType::bf16}) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " scale " + std::to_string(scale));
            HostMemory mem;
            auto ops = make_cpu_ops(dt, mem);
            // An offset and scale per row, so the statistics are not trivially 0 and 1.
            auto x = random_floats(static_cast<size_t>(N) * C, 1, -2.0f, 3.0f);
            for (float& v : x) v *= scale;
            x = round_to(dt, x);
            auto w = round_to(dt, random_floats(C, 2, 0.5f, 1.5f));
            auto b = round_to(dt, random_floats(C, 3));
            auto ref = layernorm_ref(to_double(x), to_double(w), to_double(b), N, C);
            XBuf xb(dt, x), wb(dt, w), bb(dt, b), out(dt, x.size());
            std::vector<float> mean(N), rstd(N);
            ops->layernorm_forward(out.ptr(), mean.data(), rstd.data(), xb.ptr(), wb.ptr(), bb.ptr(), N, C);
            EXPECT_LT(rel_error(out.values(), ref.out), tol(dt));
            EXPECT_LT(rel_error(mean, ref.mean), 1e-6);
            EXPECT_LT(rel_error(rstd, ref.rstd), 1e-6);
        }
    }
}

TEST(CpuLayernorm, ResidualForwardMatchesFloat64) {
    const int N = 11, C = 75;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto a = round_to(dt, random_floats(static_cast<size_t>(N) * C, 4));
        auto b2 = round_to(dt, random_floats(static_cast<size_t>(N) * C, 5));
        auto w = round_to(dt, random_floats(C, 6));
        auto b = round_to(dt, random_floats(C, 7));
        std::vector<float> sum(a.size());
        for (size_t i = 0; i < a.size(); i++) sum[i] = a[i] + b2[i];
        // The op normalises the residual as stored, so the reference takes the stored sum too.
        auto stored = round_to(dt, sum);
        auto ref = layernorm_ref(to_double(stored), to_double(w), to_double(b), N, C);
        XBuf ab(dt, a), b2b(dt, b2), wb(dt, w), bb(dt, b), res(dt, a.size()), out(dt, a.size());
        std::vector<float> mean(N), rstd(N);
        ops->residual_layernorm_forward(res.ptr(), out.ptr(), mean.data(), rstd.data(), ab.ptr(), b2b.ptr(), wb.ptr(),
                                        bb.ptr(), N, C);
        EXPECT_LT(rel_error(res.values(), to_double(sum)), dt == DType::f32 ? 1e-7 : 5e-3) << dtype_name(dt);
        EXPECT_EQ(res.values(), stored) << dtype_name(dt);
        EXPECT_LT(rel_error(out.values(), ref.out), tol(dt)) << dtype_name(dt);
        EXPECT_LT(rel_error(rstd, ref.rstd), 1e-6) << dtype_name(dt);
    }
}

// L = sum(dout * layernorm(x; w, b)); every gradient accumulates onto a random initial value.
TEST(CpuLayernorm, BackwardMatchesFiniteDifferences) {
    const int N = 5, C = 37;
    auto x = random_floats(static_cast<size_t>(N) * C, 11, -1.0f, 2.0f);
    auto w = random_floats(C, 12, 0.5f, 1.5f);
    auto b = random_floats(C, 13);
    auto dout = random_floats(x.size(), 14);
    auto dx0 = random_floats(x.size(), 15), dw0 = random_floats(C, 16), db0 = random_floats(C, 17);
    const auto xd = to_double(x), wd = to_double(w), bd = to_double(b);
    auto gx = numeric_grad(
        [&](const std::vector<double>& v) { return weighted_sum(layernorm_ref(v, wd, bd, N, C).out, dout); }, xd);
    auto gw = numeric_grad(
        [&](const std::vector<double>& v) { return weighted_sum(layernorm_ref(xd, v, bd, N, C).out, dout); }, wd);
    auto gb = numeric_grad(
        [&](const std::vector<double>& v) { return weighted_sum(layernorm_ref(xd, wd, v, N, C).out, dout); }, bd);
    for (size_t i = 0; i < gx.size(); i++) gx[i] += dx0[i];
    for (int c = 0; c < C; c++) {
        gw[c] += dw0[c];
        gb[c] += db0[c];
    }

    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> out(x.size()), mean(N), rstd(N), dx = dx0, dw = dw0, db = db0;
    ops->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C);
    ops->layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(), rstd.data(),
                            N, C);
    EXPECT_LT(rel_error(dx, gx), 1e-5);
    EXPECT_LT(rel_error(dw, gw), 1e-5);
    EXPECT_LT(rel_error(db, gb), 1e-5);
}

TEST(CpuLayernorm, Bf16BackwardMatchesFp32) {
    const int N = 33, C = 96;
    const DType h = DType::bf16;
    auto x = round_to(h, random_floats(static_cast<size_t>(N) * C, 21, -1.0f, 2.0f));
    auto w = round_to(h, random_floats(C, 22, 0.5f, 1.5f));
    auto b = round_to(h, random_floats(C, 23));
    auto dout = round_to(h, random_floats(x.size(), 24));
    auto dx0 = round_to(h, random_floats(x.size(), 25));
    std::vector<std::vector<float>> res[2];
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf xb(dt, x), wb(dt, w), bb(dt, b), db_(dt, dout), out(dt, x.size()), dx(dt, dx0), dw(dt, C), dbias(dt, C);
        std::vector<float> mean(N), rstd(N);
        ops->layernorm_forward(out.ptr(), mean.data(), rstd.data(), xb.ptr(), wb.ptr(), bb.ptr(), N, C);
        ops->layernorm_backward(dx.ptr(), dw.ptr(), dbias.ptr(), db_.ptr(), xb.ptr(), wb.ptr(), mean.data(),
                                rstd.data(), N, C);
        res[dt == DType::bf16] = {out.values(), dx.values(), dw.values(), dbias.values()};
    }
    for (int i = 0; i < 4; i++) EXPECT_LT(rel_error(res[1][i], res[0][i]), 1e-2) << "output " << i;
}
