// Whole-model checks on the CPU: a gradient check of the tiny model by central finite
// differences, recompute policies and attention kinds agreeing, the BF16 path against FP32,
// and what the memory ledger says each policy costs. The first four also run on the knob
// presets (llama-tiny: rope, rmsnorm, swiglu, GQA, untied, no biases; speedrun-tiny: rope,
// rmsnorm, relu2, qk-norm, untied, no biases).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/memory.h"
#include "core/rng.h"
#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "model/init.h"
#include "model/profiling_ops.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

constexpr int B = 2, T = 11;
const char* const kPresets[] = {"tiny", "llama-tiny", "speedrun-tiny"};

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

// The mean cross-entropy of FP32 logits, accumulated in float64: the model's own FP32 loss is
// rounded to ~5e-7, which a finite difference divides by its step; from the logits the loss is
// exact to the logits' own rounding, ~50x finer.
double mean_loss_f64(const std::vector<float>& logits, const std::vector<int32_t>& tok, int V) {
    double sum = 0;
    const size_t n = static_cast<size_t>(B) * T;
    const size_t stride = logits.size() / n;  // the padded vocabulary
    for (size_t i = 0; i < n; i++) {
        const float* row = logits.data() + i * stride;
        double mx = row[0];
        for (int v = 1; v < V; v++) mx = std::max(mx, double(row[v]));
        double z = 0;
        for (int v = 0; v < V; v++) z += std::exp(double(row[v]) - mx);
        sum += mx + std::log(z) - double(row[tok[i + 1]]);
    }
    return sum / static_cast<double>(n);
}

}  // namespace

TEST(Gpt, GradientMatchesFiniteDifferences) {
    for (const char* preset : kPresets) {
        SCOPED_TRACE(preset);
        GPTConfig c = preset_config(preset);
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

        // For each tensor, a few random directions d: Gaussian weights on a random set of
        // coordinates drawn in proportion to |g| (so the directional derivative g.d is not lost in
        // FP32 rounding), normalised to |d| = 1. The directional derivative from central differences,
        // Richardson-extrapolated (error O(h^4)) on the float64 loss of the logits, must match g.d
        // within 1e-3 of sum |d_i g_i| — the size of the terms. The correct model's worst error is
        // ~3e-4; scaling layernorm's bias gradient by 1.002 makes this test fail.
        const double h = 5e-2;
        Rng rng(7);
        double worst = 0;
        for (const auto& t : l.tensors()) {
            double total = 0;
            for (size_t i = 0; i < t.numel; i++) total += std::fabs(double(g[t.offset + i]));
            ASSERT_GT(total, 1e-6) << t.name << " has a zero gradient";
            for (int trial = 0; trial < 3; trial++) {
                std::vector<std::pair<size_t, double>> d;  // (index in tensor, weight)
                const size_t k = std::min<size_t>(t.numel, 16);
                std::vector<double> picks(k);
                for (auto& x : picks) x = rng.uniform() * total;
                std::sort(picks.begin(), picks.end());
                double run = 0;
                size_t next = 0;
                for (size_t i = 0; i < t.numel && next < k; i++) {
                    run += std::fabs(double(g[t.offset + i]));
                    bool picked = false;
                    while (next < k && picks[next] < run) next++, picked = true;
                    if (picked) d.emplace_back(i, rng.normal());
                }
                double dn = 0;
                for (auto& [i, w] : d) dn += w * w;
                dn = std::sqrt(dn);
                double analytic = 0, scale = 0;
                for (auto& [i, w] : d) {
                    w /= dn;
                    analytic += w * g[t.offset + i];
                    scale += std::fabs(w * g[t.offset + i]);
                }
                auto loss_at = [&](double s) {
                    std::vector<float> q = p;
                    for (auto& [i, w] : d) q[t.offset + i] += static_cast<float>(s * w);
                    m.set_params(q);
                    m.forward(tok.data(), tok.data() + 1, B, T);
                    return mean_loss_f64(m.get_logits(), tok, c.vocab_size);
                };
                auto central = [&](double step) { return (loss_at(step) - loss_at(-step)) / (2 * step); };
                const double fd = (4 * central(h / 2) - central(h)) / 3;
                const double err = std::fabs(fd - analytic) / scale;
                worst = std::max(worst, err);
                EXPECT_LT(err, 1e-3) << t.name << " direction " << trial << ": finite difference " << fd << " vs g.d "
                                     << analytic << " (terms " << scale << ")";
            }
        }
        std::printf("%s: worst relative error of the directional derivatives: %.2e\n", preset, worst);
    }
}

TEST(Gpt, RecomputePoliciesGiveIdenticalGradients) {
    for (const char* preset : kPresets) {
        SCOPED_TRACE(preset);
        GPTConfig c = preset_config(preset);
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
}

TEST(Gpt, FlashAndNaiveAttentionAgree) {
    for (const char* preset : kPresets) {
        SCOPED_TRACE(preset);
        GPTConfig c = preset_config(preset);
        std::vector<float> p = params_for(c, ParamLayout(c));
        auto tok = tokens(c, 3);
        RunResult naive = run_model(c, DType::f32, AttentionKind::naive, Recompute::none, p, tok);
        RunResult flash = run_model(c, DType::f32, AttentionKind::flash, Recompute::none, p, tok);
        EXPECT_NEAR(naive.loss, flash.loss, 1e-5 * naive.loss);
        EXPECT_LT(test::rel_error(flash.grads, naive.grads), 1e-5);
        EXPECT_LT(flash.activation_peak, naive.activation_peak);
    }
}

// BF16 storage rounds every activation and gradient to 8 mantissa bits: the loss stays within
// 1% and the gradient within 5% (relative Frobenius norm) of the FP32 path on this model.
TEST(Gpt, Bf16TracksFp32) {
    for (const char* preset : kPresets) {
        SCOPED_TRACE(preset);
        GPTConfig c = preset_config(preset);
        std::vector<float> p = params_for(c, ParamLayout(c));
        auto tok = tokens(c, 4);
        RunResult f32 = run_model(c, DType::f32, AttentionKind::flash, Recompute::none, p, tok);
        RunResult b16 = run_model(c, DType::bf16, AttentionKind::flash, Recompute::none, p, tok);
        EXPECT_NEAR(b16.loss, f32.loss, 1e-2 * f32.loss);
        EXPECT_LT(test::rel_error(b16.grads, f32.grads), 5e-2);
    }
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

// The hardware FLOPs of --recompute full are what its backward runs again: the matmuls that the
// profiling decorator sees it call (2 N C OC each, from the shapes of the calls, the GELU epilogue
// left out) plus the attention forward's 4 L C T a token. The formula also counts 2 FLOPs a token
// for each norm weight and bias it reruns, which no matmul shows, so it may exceed the calls by
// at most those; counting the MLP output projection, which the recompute skips, exceeds them by
// 2 C H a layer.
TEST(Gpt, FullRecomputeHardwareFlopsAreTheMatmulsItReruns) {
    for (const char* preset : kPresets) {
        SCOPED_TRACE(preset);
        GPTConfig c = preset_config(preset);
        const ParamLayout layout(c);
        auto tok = tokens(c, 7);
        HostMemory mem;
        ProfilingOps ops(make_cpu_ops(DType::f32, mem));
        GPT m(c, ops, ModelOptions{AttentionKind::flash, Recompute::full});
        m.set_params(params_for(c, layout));
        m.forward(tok.data(), tok.data() + 1, B, T, true);
        ops.set_enabled(true);
        m.backward();
        const double N = static_cast<double>(B) * T;
        double rerun = 0;
        for (const auto& [key, st] : ops.stats()) {
            if (st.op == "matmul_forward") rerun += st.flops;
            if (st.op == "matmul_gelu_forward") rerun += st.flops - st.calls * 15.0 * N * c.hidden();
        }
        double vectors = 0;  // norm weights and biases of the blocks
        for (const auto& t : layout.tensors())
            if (t.unit >= 1 && t.unit <= c.n_layer && t.shape.size() == 1) vectors += static_cast<double>(t.numel);
        const FlopsPerToken f = flops_per_token(c, T, Recompute::full);
        const double counted = f.hardware - f.model - 4.0 * c.n_layer * c.n_embd * T;
        EXPECT_GE(counted, rerun / N);
        EXPECT_LE(counted, rerun / N + 2 * vectors);
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

// Tracking the attention logits changes nothing else, and what it reports is each layer's
// largest scaled q.k: the same under naive and flash attention and under full recompute, and
// it grows in proportion when a layer's query weights (and biases) are scaled up.
TEST(Gpt, AttentionMaxLogitsPerLayer) {
    GPTConfig c = preset_config("tiny");
    const ParamLayout layout(c);
    std::vector<float> p = params_for(c, layout);
    auto tok = tokens(c, 6);
    auto run = [&](AttentionKind att, Recompute rc, bool track, const std::vector<float>& params) {
        Backend be = make_backend("cpu", DType::f32);
        ModelOptions mo;
        mo.attention = att;
        mo.recompute = rc;
        GPT m(c, *be.ops, mo);
        m.set_params(params);
        m.set_track_attention_max(track);
        m.zero_grad();
        const float loss = m.forward(tok.data(), tok.data() + 1, B, T, true);
        m.backward();
        std::vector<float> mx;
        if (track) {
            mx = m.attention_max_logits();
        } else {
            EXPECT_THROW(m.attention_max_logits(), Error);
        }
        return std::make_pair(loss, mx);
    };
    const auto off = run(AttentionKind::flash, Recompute::none, false, p);
    const auto flash = run(AttentionKind::flash, Recompute::none, true, p);
    const auto naive = run(AttentionKind::naive, Recompute::full, true, p);
    EXPECT_EQ(off.first, flash.first);
    ASSERT_EQ(flash.second.size(), static_cast<size_t>(c.n_layer));
    for (int l = 0; l < c.n_layer; l++) EXPECT_NEAR(flash.second[l], naive.second[l], 1e-5 * std::fabs(naive.second[l]) + 1e-6);

    // Scaling layer 0's query rows (weights and biases) by 3 scales its logits by 3; the max
    // logit is positive here, so its maximum scales by 3 too.
    std::vector<float> scaled = p;
    const TensorInfo& w = layout.block_tensor(0, kQkvW);
    const TensorInfo& b = layout.block_tensor(0, kQkvB);
    for (size_t i = 0; i < static_cast<size_t>(c.n_embd) * c.n_embd; i++) scaled[w.offset + i] *= 3;
    for (int i = 0; i < c.n_embd; i++) scaled[b.offset + i] *= 3;
    const auto big = run(AttentionKind::flash, Recompute::none, true, scaled);
    ASSERT_GT(flash.second[0], 0);
    EXPECT_NEAR(big.second[0], 3 * flash.second[0], 1e-4 * std::fabs(flash.second[0]));
}

// Turning tracking on or off drops the activations (the row-max buffers come and go with them),
// so a backward pending across the switch has nothing left to run on: it is refused with an
// Error, not run on the freed activations.
TEST(Gpt, TrackingSwitchBetweenForwardAndBackwardIsRefused) {
    GPTConfig c = preset_config("tiny");
    Backend be = make_backend("cpu", DType::f32);
    GPT m(c, *be.ops);
    m.set_params(params_for(c, m.layout()));
    auto tok = tokens(c, 7);
    m.forward(tok.data(), tok.data() + 1, B, T, true);
    m.set_track_attention_max(true);
    EXPECT_THROW(m.backward(), Error);
}

// The model checks its config before cutting the layout from it: with no heads the layout's
// head size divided by zero (a crash) before the check could say so.
TEST(Gpt, InvalidConfigIsRefusedBeforeTheLayout) {
    Backend be = make_backend("cpu", DType::f32);
    GPTConfig c = preset_config("tiny");
    c.n_head = 0;
    try {
        GPT m(c, *be.ops);
        ADD_FAILURE() << "a model with no heads was built";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("model sizes must be positive"), std::string::npos) << e.what();
    }
}

// A pass for backward leaves dlogits where the logits were: reading logits then is refused
// (it returned the gradient, silently, as logits), and a later plain forward reads them again.
TEST(Gpt, LogitsAfterABackwardPassAreRefused) {
    GPTConfig c = preset_config("tiny");
    Backend be = make_backend("cpu", DType::f32);
    GPT m(c, *be.ops);
    m.set_params(params_for(c, m.layout()));
    auto tok = tokens(c, 8);
    m.forward(tok.data(), tok.data() + 1, B, T);
    const std::vector<float> logits = m.get_logits();
    m.forward(tok.data(), tok.data() + 1, B, T, true);
    try {
        m.get_logits();
        ADD_FAILURE() << "dlogits were returned as logits";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("dlogits"), std::string::npos) << e.what();
    }
    m.backward();
    EXPECT_THROW(m.get_logits(), Error);
    m.forward(tok.data(), nullptr, B, T);
    EXPECT_EQ(m.get_logits(), logits);
}
