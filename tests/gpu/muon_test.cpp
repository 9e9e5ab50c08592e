// The CUDA Muon ops against the CPU ops (FP32 reference, same inputs) for fp32 and bf16
// storage: Nesterov momentum, Newton-Schulz on wide, tall and square matrices (FP32 on both
// backends whatever the storage, so 1e-4), the update with master weights and without, and
// Newton-Schulz giving the same bits twice. Outputs are poisoned with NaN first. Skips
// without a device.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/gpu/gpu_harness.h"

namespace sixnd::test {
namespace {

class CudaMuonTest : public CudaVsCpuTest {
protected:
    CudaMuonTest() : CudaVsCpuTest(20261201) {}
};

TEST_P(CudaMuonTest, Momentum) {
    const size_t n = 4099;
    auto g_v = rnd(n), m_v = rnd(n, -0.1f, 0.1f);
    Tensor g = s->x(g_v), m = s->f(m_v), out = s->alloc(Kind::f32, n);
    s->poison(out);
    s->ref().muon_momentum(out.rf(), m.rf(), g.r(), n, 0.95f, 0.5f);
    s->dev().muon_momentum(out.df(), m.df(), g.d(), n, 0.95f, 0.5f);
    EXPECT_TRUE(s->close(out, 1e-6, "direction"));
    EXPECT_TRUE(s->close(m, 1e-6, "momentum"));
}

TEST_P(CudaMuonTest, NewtonSchulz) {
    for (auto [rows, cols] : {std::pair{64, 192}, std::pair{192, 64}, std::pair{96, 96}, std::pair{3, 50}}) {
        const size_t n = size_t(rows) * cols;
        auto x_v = rnd(n);
        std::vector<std::vector<float>> runs;
        for (int run = 0; run < 2; run++) {
            Tensor x = s->f(x_v), work = s->alloc(Kind::f32, Ops::newton_schulz_floats(rows, cols));
            s->poison(work);
            if (run == 0) s->ref().newton_schulz(x.rf(), work.rf(), rows, cols, 5);
            s->dev().newton_schulz(x.df(), work.df(), rows, cols, 5);
            const std::string what = std::to_string(rows) + "x" + std::to_string(cols);
            if (run == 0) {
                EXPECT_TRUE(s->close(x, 1e-4, what.c_str()));
            }
            runs.push_back(s->get_dev(x));
        }
        EXPECT_EQ(runs[0], runs[1]) << "newton_schulz is not deterministic";
    }
}

TEST_P(CudaMuonTest, Apply) {
    const size_t n = 5003;
    for (bool with_master : {true, false}) {
        auto p_v = rnd(n), u_v = rnd(n);
        Tensor p = s->x(p_v), u = s->f(u_v), master = s->f(p_v);
        s->ref().muon_apply(p.r(), with_master ? master.rf() : nullptr, u.rf(), n, 0.02f, 1.7f, 0.1f);
        s->dev().muon_apply(p.d(), with_master ? master.df() : nullptr, u.df(), n, 0.02f, 1.7f, 0.1f);
        EXPECT_TRUE(s->close(p, tol(), "params"));
        if (with_master) {
            EXPECT_TRUE(s->close(master, 1e-6, "master"));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(DTypes, CudaMuonTest, ::testing::Values(DType::f32, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& i) { return std::string(dtype_name(i.param)); });

}  // namespace
}  // namespace sixnd::test
