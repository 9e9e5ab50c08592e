// SwiGLU ([gate | up] -> silu(gate) * up) against float64, and its backward against central
// differences of the float64 forward. Tolerances: FP32 1e-5 relative (exp_fast is ~2 ulp);
// BF16 storage 1e-2.
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

std::vector<double> swiglu_ref(const std::vector<double>& x, int N, int H) {
    std::vector<double> out(static_cast<size_t>(N) * H);
    for (int n = 0; n < N; n++)
        for (int j = 0; j < H; j++) {
            const double g = x[static_cast<size_t>(n) * 2 * H + j], u = x[static_cast<size_t>(n) * 2 * H + H + j];
            out[static_cast<size_t>(n) * H + j] = g / (1 + std::exp(-g)) * u;
        }
    return out;
}

}  // namespace

TEST(CpuSwiglu, ForwardMatchesFloat64) {
    const int N = 9, H = 70;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto x = round_to(dt, random_floats(static_cast<size_t>(N) * 2 * H, 1, -4.0f, 4.0f));
        auto ref = swiglu_ref(to_double(x), N, H);
        XBuf xb(dt, x), out(dt, static_cast<size_t>(N) * H);
        ops->swiglu_forward(out.ptr(), xb.ptr(), N, H);
        EXPECT_LT(rel_error(out.values(), ref), dt == DType::f32 ? 1e-5 : 1e-2) << dtype_name(dt);
    }
}

TEST(CpuSwiglu, BackwardMatchesFiniteDifferences) {
    const int N = 4, H = 21;
    auto x = random_floats(static_cast<size_t>(N) * 2 * H, 11, -4.0f, 4.0f);
    auto dout = random_floats(static_cast<size_t>(N) * H, 14);
    auto g = numeric_grad([&](const std::vector<double>& v) { return weighted_sum(swiglu_ref(v, N, H), dout); },
                          to_double(x));
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto xr = round_to(dt, x), dr = round_to(dt, dout);
        auto gr = dt == DType::f32 ? g
                                   : numeric_grad([&](const std::vector<double>& v) { return weighted_sum(swiglu_ref(v, N, H), dr); },
                                                  to_double(xr));
        XBuf xb(dt, xr), db(dt, dr), dx(dt, std::vector<float>(x.size(), 7.0f));
        ops->swiglu_backward(dx.ptr(), xb.ptr(), db.ptr(), N, H);
        EXPECT_LT(rel_error(dx.values(), gr), dt == DType::f32 ? 1e-5 : 1e-2) << dtype_name(dt);
    }
}
