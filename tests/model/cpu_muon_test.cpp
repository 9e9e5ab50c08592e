// The Muon ops against a float64 reference: Newton-Schulz on wide, tall and square matrices
// (the tall case iterates on the transpose), and three full Muon steps (Nesterov momentum,
// orthogonalisation, the shape-scaled update with weight decay and a grad_scale) in FP32 and
// bf16 storage with master weights. Five Newton-Schulz steps grow FP32 rounding by a few
// orders of magnitude, hence 1e-4 relative; bf16 parameters equal round(master).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

// x[rows, cols] -> its quintic Newton-Schulz iterate, in double, with an explicit transpose.
std::vector<double> ns_ref(std::vector<double> x, int rows, int cols, int steps) {
    const bool tall = rows > cols;
    const int s = tall ? cols : rows, l = tall ? rows : cols;
    std::vector<double> X(x.size());
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) (tall ? X[size_t(j) * l + i] : X[size_t(i) * l + j]) = x[size_t(i) * cols + j];
    double norm = 0;
    for (double v : X) norm += v * v;
    norm = std::sqrt(norm) + 1e-7;
    for (double& v : X) v /= norm;
    const double a = 3.4445, b = -4.7750, c = 2.0315;
    for (int k = 0; k < steps; k++) {
        std::vector<double> A(size_t(s) * s, 0.0), B(size_t(s) * s, 0.0), Y(X.size(), 0.0);
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++)
                for (int t = 0; t < l; t++) A[size_t(i) * s + j] += X[size_t(i) * l + t] * X[size_t(j) * l + t];
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++) {
                double aa = 0;
                for (int t = 0; t < s; t++) aa += A[size_t(i) * s + t] * A[size_t(t) * s + j];
                B[size_t(i) * s + j] = b * A[size_t(i) * s + j] + c * aa;
            }
        for (int i = 0; i < s; i++)
            for (int j = 0; j < l; j++) {
                double bx = 0;
                for (int t = 0; t < s; t++) bx += B[size_t(i) * s + t] * X[size_t(t) * l + j];
                Y[size_t(i) * l + j] = a * X[size_t(i) * l + j] + bx;
            }
        X = Y;
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) x[size_t(i) * cols + j] = tall ? X[size_t(j) * l + i] : X[size_t(i) * l + j];
    return x;
}

}  // namespace

TEST(CpuMuon, NewtonSchulzMatchesFloat64) {
    for (DType dt : {DType::f32, DType::bf16})  // the storage type must not change the FP32 math
        for (auto [rows, cols] : {std::pair{5, 9}, std::pair{9, 5}, std::pair{7, 7}, std::pair{1, 6}, std::pair{6, 1},
                                  std::pair{24, 72}}) {
            HostMemory mem;
            auto ops = make_cpu_ops(dt, mem);
            std::vector<float> x = random_floats(size_t(rows) * cols, 7 + rows, -2.0f, 2.0f);
            const std::vector<double> ref = ns_ref(to_double(x), rows, cols, 5);
            std::vector<float> work(Ops::newton_schulz_floats(rows, cols));
            ops->newton_schulz(x.data(), work.data(), rows, cols, 5);
            const std::string what = std::string(dtype_name(dt)) + " " + std::to_string(rows) + "x" + std::to_string(cols);
            EXPECT_LT(rel_error(x, ref), 1e-4) << what;
            // The iterate's singular values end up near 1 (between ~0.7 and ~1.2 for these
            // coefficients): the squared Frobenius norm is about min(rows, cols).
            double fro = 0;
            for (double v : ref) fro += v * v;
            EXPECT_GT(fro, 0.4 * std::min(rows, cols)) << what;
            EXPECT_LT(fro, 1.5 * std::min(rows, cols)) << what;
        }
}

TEST(CpuMuon, StepMatchesFloat64) {
    const int rows = 12, cols = 20;
    const size_t n = size_t(rows) * cols;
    for (DType dt : {DType::f32, DType::bf16})
        for (int transpose = 0; transpose < 2; transpose++) {
            const int R = transpose ? cols : rows, C = transpose ? rows : cols;
            HostMemory mem;
            auto ops = make_cpu_ops(dt, mem);
            const std::vector<float> p0 = round_to(dt, random_floats(n, 3));
            XBuf params(dt, p0);
            std::vector<float> master(p0), m(n, 0.0f), dir(n), work(Ops::newton_schulz_floats(R, C));
            std::vector<double> rp = to_double(p0), rm(n, 0.0);
            const float beta = 0.9f, lr = 0.05f, wd = 0.1f, gscale = 0.5f;
            const float scale = std::sqrt(std::max(1.0f, float(R) / float(C)));
            for (int step = 1; step <= 3; step++) {
                const std::vector<float> g = round_to(dt, random_floats(n, 20 + step));
                XBuf gb(dt, g);
                ops->muon_momentum(dir.data(), m.data(), gb.ptr(), n, beta, gscale);
                ops->newton_schulz(dir.data(), work.data(), R, C, 5);
                ops->muon_apply(params.ptr(), master.data(), dir.data(), n, lr, scale, wd);
                std::vector<double> u(n);
                for (size_t i = 0; i < n; i++) {
                    const double gi = double(g[i]) * gscale;
                    rm[i] = beta * rm[i] + (1 - beta) * gi;
                    u[i] = (1 - beta) * gi + beta * rm[i];
                }
                u = ns_ref(u, R, C, 5);
                for (size_t i = 0; i < n; i++) rp[i] = rp[i] * (1 - double(lr) * wd) - double(lr) * scale * u[i];
            }
            const std::string what = std::string(dtype_name(dt)) + " " + std::to_string(R) + "x" + std::to_string(C);
            EXPECT_LT(rel_error(m, rm), 1e-6) << what;
            EXPECT_LT(rel_error(master, rp), 1e-5) << what;
            EXPECT_EQ(params.values(), round_to(dt, master)) << what;
        }
}

TEST(CpuMuon, WithoutMasterUpdatesParamsAndRepeatsBitwise) {
    const int rows = 16, cols = 8;
    const size_t n = size_t(rows) * cols;
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<std::vector<float>> results;
    for (int run = 0; run < 2; run++) {
        XBuf params(DType::f32, random_floats(n, 5));
        std::vector<float> m(n, 0.0f), dir(n), work(Ops::newton_schulz_floats(rows, cols));
        XBuf g(DType::f32, random_floats(n, 6));
        ops->muon_momentum(dir.data(), m.data(), g.ptr(), n, 0.95f, 1.0f);
        ops->newton_schulz(dir.data(), work.data(), rows, cols, 5);
        ops->muon_apply(params.ptr(), nullptr, dir.data(), n, 0.02f, std::sqrt(2.0f), 0.0f);
        results.push_back(params.values());
    }
    EXPECT_EQ(results[0], results[1]);
    EXPECT_NE(results[0], XBuf(DType::f32, random_floats(n, 5)).values());
}
