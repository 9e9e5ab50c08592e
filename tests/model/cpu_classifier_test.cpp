// Fused softmax + cross-entropy against float64, dlogits against central differences of the
// float64 loss, and the padded vocabulary columns. FP32 losses 1e-6 relative, dlogits 1e-5;
// BF16 storage: losses equal the FP32 path's on the same (rounded) logits to 1e-6, dlogits to
// 1e-2 (one rounding of each).
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

const int N = 7, V = 53, Vp = 64;

std::vector<double> losses_ref(const std::vector<double>& logits, const std::vector<int32_t>& targets) {
    std::vector<double> out(N);
    for (int n = 0; n < N; n++) {
        const double* row = &logits[static_cast<size_t>(n) * Vp];
        double mx = -INFINITY, s = 0;
        for (int i = 0; i < V; i++) mx = std::max(mx, row[i]);
        for (int i = 0; i < V; i++) s += std::exp(row[i] - mx);
        out[n] = mx + std::log(s) - row[targets[n]];
    }
    return out;
}

}  // namespace

TEST(CpuClassifier, LossesAndGradientMatchFloat64) {
    auto logits = random_floats(static_cast<size_t>(N) * Vp, 1, -4.0f, 4.0f);
    auto targets = random_ints(N, 2, 0, V);
    targets[0] = V - 1;  // the last real column
    const float dloss = 1.0f / N;
    auto ref = losses_ref(to_double(logits), targets);
    auto g = numeric_grad(
        [&](const std::vector<double>& v) {
            double s = 0;
            for (double l : losses_ref(v, targets)) s += dloss * l;
            return s;
        },
        to_double(logits));

    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> x = logits, losses(N);
    ops->classifier_forward_backward(x.data(), losses.data(), targets.data(), N, V, Vp, dloss, false);
    EXPECT_LT(rel_error(losses, ref), 1e-6);
    EXPECT_EQ(x, logits);  // without write_dlogits the logits are left alone

    ops->classifier_forward_backward(x.data(), losses.data(), targets.data(), N, V, Vp, dloss, true);
    EXPECT_LT(rel_error(losses, ref), 1e-6);
    EXPECT_LT(rel_error(x, g), 1e-5);
    for (int n = 0; n < N; n++)
        for (int i = V; i < Vp; i++) EXPECT_EQ(x[static_cast<size_t>(n) * Vp + i], 0.0f);

    std::vector<float> y = logits;  // losses may be null when only dlogits are wanted
    ops->classifier_forward_backward(y.data(), nullptr, targets.data(), N, V, Vp, dloss, true);
    EXPECT_EQ(y, x);
}

TEST(CpuClassifier, LargeLogitsStayFinite) {
    std::vector<float> x(static_cast<size_t>(N) * Vp, 0.0f);
    std::vector<int32_t> targets(N, 3);
    for (int n = 0; n < N; n++) x[static_cast<size_t>(n) * Vp + 5] = 1000.0f;
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> losses(N);
    ops->classifier_forward_backward(x.data(), losses.data(), targets.data(), N, V, Vp, 1.0f, true);
    for (int n = 0; n < N; n++) {
        EXPECT_NEAR(losses[n], 1000.0f, 1e-3f);
        EXPECT_NEAR(x[static_cast<size_t>(n) * Vp + 5], 1.0f, 1e-6f);
        EXPECT_NEAR(x[static_cast<size_t>(n) * Vp + 3], -1.0f, 1e-6f);
    }
}

TEST(CpuClassifier, Bf16MatchesFp32) {
    auto logits = round_to(DType::bf16, random_floats(static_cast<size_t>(N) * Vp, 3, -4.0f, 4.0f));
    auto targets = random_ints(N, 4, 0, V);
    std::vector<float> losses[2], dlogits[2];
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf x(dt, logits);
        std::vector<float> l(N);
        ops->classifier_forward_backward(x.ptr(), l.data(), targets.data(), N, V, Vp, 0.5f, true);
        losses[dt == DType::bf16] = l;
        dlogits[dt == DType::bf16] = x.values();
    }
    EXPECT_LT(rel_error(losses[1], losses[0]), 1e-6);
    EXPECT_LT(rel_error(dlogits[1], dlogits[0]), 1e-2);
}
