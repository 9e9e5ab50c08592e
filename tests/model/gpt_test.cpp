// Whole-model checks on the CPU: a gradient check of the tiny model by central finite
// differences, recompute policies and attention kinds agreeing, the BF16 path against FP32,
// and what the memory ledger says each policy costs.
#include <gtest/gtest.h>

#include <cmath>

#include "model/backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

constexpr int B = 2, T = 11;

std::vector<int32_t> tokens(const GPTConfig& c, uint64_t seed) {
    return test::random_ints(static_cast<size_t>(B) * T + 1, seed, 0, c.vocab_size);
}

// GPT-2 init plus perturbed layernorms and biases, so that no gradient is trivially zero.
std::vector<float> params_for(const GPTConfig& c, const ParamLayout& l) {
    std::vector<float> p = gpt2_init(l, c, 42);
    std::vector<float> noise = test::random_floats(p.size(), 43, -0.05f, 0.05f);
    for (const auto& t : l.tensors()) {
        if (t.decay()) continue;
        for (size_t i = 0; i < t.numel; i++) p[t.offset + i] += noise[t.offset + i];
    }
    return p;
}

struct RunResult {
    float loss;
    std::vector<float> grads;
    size_t activation_peak;
};

RunResult run_model(const GPTConfig& c, DType dt, AttentionKind att, Recompute rc, const std::vector<float>& p,
        const std::vector<int32_t>& tok) {
    Backend be = make_backend("cpu", dt);
    ModelOptions mo;
    mo.attention = att;
    mo.recompute = rc;
    GPT m(c, *be.ops, mo);
    m.set_params(p);
    m.zero_grad();
    float loss = m.forward(tok.data(), tok.data() + 1, B, T, true);
    m.backward();
    return {loss, m.get_grads(), be.memory->ledger().peak(MemCategory::activations)};
}

}  // namespace

TEST(Gpt, GradientMatchesFiniteDifferences) {
    GPTConfig c = preset_config("tiny");
    ParamLayout l(c);
    std::vector<float> p = params_for(c, l);
    auto tok = tokens(c, 1);
    Backend be = make_backend("cpu", DType::f32);
    GPT m(c, *be.ops, ModelOptions{AttentionKind::naive, Recompute::none});
    m.set_params(p);
    m.zero_grad();
    m.forward(tok.data(), tok.data() + 1, B, T, true);
    m.backward();
    std::vector<float> g = m.get_grads();

    // Along d = g_t / |g_t| for each tensor t, the directional derivative is |g_t|; a gradient
    // that is wrong in size or direction misses it. Central differences with h = 1e-2 keep the
    // FP32 rounding of the loss (~1e-6) well below the tolerance.
    const double h = 1e-2;
    for (const auto& t : l.tensors()) {
        double norm = 0;
        for (size_t i = 0; i < t.numel; i++) norm += double(g[t.offset + i]) * g[t.offset + i];
        norm = std::sqrt(norm);
        ASSERT_GT(norm, 1e-6) << t.name << " has a zero gradient";
        auto loss_at = [&](double s) {
            std::vector<float> q = p;
            for (size_t i = 0; i < t.numel; i++) q[t.offset + i] += static_cast<float>(s * g[t.offset + i] / norm);
            m.set_params(q);
            return static_cast<double>(m.forward(tok.data(), tok.data() + 1, B, T));
        };
        double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
        EXPECT_NEAR(fd / norm, 1.0, 2e-2) << t.name << ": finite difference " << fd << " vs |grad| " << norm;
    }
}

TEST(Gpt, RecomputePoliciesGiveIdenticalGradients) {
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = params_for(c, ParamLayout(c));
    auto tok = tokens(c, 2);
    for (AttentionKind att : {AttentionKind::naive, AttentionKind::flash}) {
        RunResult none = run_model(c, DType::f32, att, Recompute::none, p, tok);
        RunResult sel = run_model(c, DType::f32, att, Recompute::selective, p, tok);
        RunResult full = run_model(c, DType::f32, att, Recompute::full, p, tok);
        EXPECT_EQ(none.loss, sel.loss);
        EXPECT_EQ(none.loss, full.loss);
        EXPECT_EQ(none.grads, sel.grads) << "selective recompute changed the gradients";
        EXPECT_EQ(none.grads, full.grads) << "full recompute changed the gradients";
        EXPECT_LT(sel.activation_peak, none.activation_peak);
        EXPECT_LT(full.activation_peak, sel.activation_peak);
    }
}

TEST(Gpt, FlashAndNaiveAttentionAgree) {
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = params_for(c, ParamLayout(c));
    auto tok = tokens(c, 3);
    RunResult naive = run_model(c, DType::f32, AttentionKind::naive, Recompute::none, p, tok);
    RunResult flash = run_model(c, DType::f32, AttentionKind::flash, Recompute::none, p, tok);
    EXPECT_NEAR(naive.loss, flash.loss, 1e-5 * naive.loss);
    EXPECT_LT(test::rel_error(flash.grads, naive.grads), 1e-5);
    EXPECT_LT(flash.activation_peak, naive.activation_peak);
}

// BF16 storage rounds every activation and gradient to 8 mantissa bits: the loss stays within
// 1% and the gradient within 5% (relative Frobenius norm) of the FP32 path on this model.
TEST(Gpt, Bf16TracksFp32) {
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = params_for(c, ParamLayout(c));
    auto tok = tokens(c, 4);
    RunResult f32 = run_model(c, DType::f32, AttentionKind::flash, Recompute::none, p, tok);
    RunResult b16 = run_model(c, DType::bf16, AttentionKind::flash, Recompute::none, p, tok);
    EXPECT_NEAR(b16.loss, f32.loss, 1e-2 * f32.loss);
    EXPECT_LT(test::rel_error(b16.grads, f32.grads), 5e-2);
}

TEST(Gpt, DeterministicAcrossRuns) {
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = params_for(c, ParamLayout(c));
    auto tok = tokens(c, 5);
    for (DType dt : {DType::f32, DType::bf16}) {
        RunResult a = run_model(c, dt, AttentionKind::flash, Recompute::none, p, tok);
        RunResult b = run_model(c, dt, AttentionKind::flash, Recompute::none, p, tok);
        EXPECT_EQ(a.loss, b.loss);
        EXPECT_EQ(a.grads, b.grads);
    }
}

TEST(Gpt, LedgerCountsParametersAndGradients) {
    GPTConfig c = preset_config("tiny");
    for (DType dt : {DType::f32, DType::bf16}) {
        Backend be = make_backend("cpu", dt);
        GPT m(c, *be.ops);
        const size_t bytes = m.layout().total() * dtype_size(dt);
        EXPECT_EQ(be.memory->ledger().current(MemCategory::params), bytes);
        EXPECT_EQ(be.memory->ledger().current(MemCategory::grads), bytes);
    }
}
