// The Muon optimizer's wiring on the tiny GPT's layout (one process, FP32): it takes exactly
// the blocks' 2-D tensors (4 per layer in GPT-2), leaves every other tensor to AdamW (updated
// bitwise as a plain AdamW would), moves each Muon matrix by the ops' momentum, Newton-Schulz
// and scaled update, and counts its Newton-Schulz FLOPs as 5 (4 s^2 l + 2 s^3) per matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "dist/comm.h"
#include "model/config.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/test_util.h"
#include "train/muon.h"

using namespace sixnd;
using namespace sixnd::test;

TEST(Muon, TakesExactlyTheBlocksMatrices) {
    const ParamLayout layout(preset_config("tiny"));
    const GPTConfig cfg = preset_config("tiny");
    int taken = 0;
    for (const auto& t : layout.tensors()) {
        const bool muon = Muon::updates(t, layout);
        taken += muon;
        const bool block_matrix = t.name[0] == 'h' && t.name.find(".weight") != std::string::npos &&
                                  t.name.find("ln_") == std::string::npos;
        EXPECT_EQ(muon, block_matrix) << t.name;
    }
    EXPECT_EQ(taken, 4 * cfg.n_layer);
}

TEST(Muon, StepsMatricesAndLeavesTheRestToAdamW) {
    const ParamLayout layout(preset_config("tiny"));
    const size_t n = layout.total();
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    LocalComm comm(mem);
    const std::vector<float> p0 = random_floats(n, 1, -0.1f, 0.1f), g = random_floats(n, 2);
    std::vector<float> pa(p0), pm(p0), grads(g);
    OptimizerConfig cfg;
    cfg.weight_decay = 0.1f;
    AdamW::Locate adam_at = [&](const ShardSpan&) { return static_cast<void*>(pa.data()); };
    AdamW::Locate muon_at = [&](const ShardSpan&) { return static_cast<void*>(pm.data()); };
    AdamW::Locate grad_at = [&](const ShardSpan&) { return static_cast<void*>(grads.data()); };
    AdamW adam(*ops, layout, whole_buffer(n), cfg, adam_at);
    cfg.kind = OptimizerKind::muon;
    cfg.muon_lr = 0.04f;
    cfg.muon_weight_decay = 0.2f;
    std::unique_ptr<AdamW> muon = make_optimizer(*ops, layout, whole_buffer(n), cfg, muon_at, comm, 2e-3f);
    adam.step(adam_at, grad_at, 1e-3f, 0.5f, 1);
    muon->step(muon_at, grad_at, 1e-3f, 0.5f, 1);  // Muon's rate: 0.04 x 1e-3 / 2e-3 = 0.02

    double flops = 0;
    for (const auto& t : layout.tensors()) {
        const std::vector<float> a(pa.begin() + t.offset, pa.begin() + t.offset + t.numel);
        std::vector<float> m(pm.begin() + t.offset, pm.begin() + t.offset + t.numel);
        if (!Muon::updates(t, layout)) {
            EXPECT_EQ(m, a) << t.name;
            continue;
        }
        const int rows = t.shape[0], cols = t.shape[1];
        std::vector<float> mom(t.numel, 0.0f), dir(t.numel), work(Ops::newton_schulz_floats(rows, cols));
        std::vector<float> want(p0.begin() + t.offset, p0.begin() + t.offset + t.numel);
        ops->muon_momentum(dir.data(), mom.data(), g.data() + t.offset, t.numel, 0.95f, 0.5f);
        ops->newton_schulz(dir.data(), work.data(), rows, cols, 5);
        ops->muon_apply(want.data(), nullptr, dir.data(), t.numel, 0.02f, std::sqrt(std::max(1.0f, float(rows) / cols)), 0.2f);
        EXPECT_LT(rel_error(m, to_double(want)), 1e-6) << t.name;
        EXPECT_GT(rel_error(m, to_double(a)), 1e-3) << t.name << ": updated like AdamW";
        const double s = std::min(rows, cols), l = std::max(rows, cols);
        flops += 5 * (4 * s * s * l + 2 * s * s * s);
    }
    EXPECT_EQ(muon->matmul_flops_per_step(), flops);
    EXPECT_EQ(adam.matmul_flops_per_step(), 0);
}

// Muon's rate is --muon-lr scaled as the schedule scales --lr: a --lr as small as a float gets
// (AdamW's tensors all but frozen) still leaves Muon its own rate, not muon_lr / lr overflowed
// to infinity and every matrix non-finite.
TEST(Muon, KeepsItsRateUnderTheSmallestLr) {
    const ParamLayout layout(preset_config("tiny"));
    const size_t n = layout.total();
    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    LocalComm comm(mem);
    const std::vector<float> p0 = random_floats(n, 1, -0.1f, 0.1f), g = random_floats(n, 2);
    std::vector<float> p(p0), grads(g);
    OptimizerConfig cfg;
    cfg.kind = OptimizerKind::muon;
    AdamW::Locate at = [&](const ShardSpan&) { return static_cast<void*>(p.data()); };
    AdamW::Locate grad_at = [&](const ShardSpan&) { return static_cast<void*>(grads.data()); };
    const float tiny_lr = 1e-42f;
    std::unique_ptr<AdamW> muon = make_optimizer(*ops, layout, whole_buffer(n), cfg, at, comm, tiny_lr);
    muon->step(at, grad_at, tiny_lr, 1.0f, 1);
    EXPECT_FALSE(ops->take_nonfinite_update());
    for (const auto& t : layout.tensors()) {
        if (!Muon::updates(t, layout)) continue;
        const int rows = t.shape[0], cols = t.shape[1];
        std::vector<float> mom(t.numel, 0.0f), dir(t.numel), work(Ops::newton_schulz_floats(rows, cols));
        std::vector<float> want(p0.begin() + t.offset, p0.begin() + t.offset + t.numel);
        ops->muon_momentum(dir.data(), mom.data(), g.data() + t.offset, t.numel, cfg.muon_momentum, 1.0f);
        ops->newton_schulz(dir.data(), work.data(), rows, cols, 5);
        ops->muon_apply(want.data(), nullptr, dir.data(), t.numel, cfg.muon_lr, std::sqrt(std::max(1.0f, float(rows) / cols)), 0.0f);
        const std::vector<float> got(p.begin() + t.offset, p.begin() + t.offset + t.numel);
        EXPECT_LT(rel_error(got, to_double(want)), 1e-6) << t.name;
    }
}
