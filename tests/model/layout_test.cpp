#include <gtest/gtest.h>

#include "core/error.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/param_layout.h"

using namespace sixnd;

TEST(Config, PresetsAndPaddedVocab) {
    GPTConfig c = preset_config("gpt2-124m");
    EXPECT_EQ(c.n_layer, 12);
    EXPECT_EQ(c.n_embd, 768);
    EXPECT_EQ(c.vocab_size, 50257);
    EXPECT_EQ(c.padded_vocab_size, 50304);
    EXPECT_EQ(preset_config("gpt2-1558m").n_embd, 1600);
    EXPECT_EQ(preset_config("d6", 256).padded_vocab_size, 256);
    EXPECT_EQ(preset_config("d6", 257).padded_vocab_size, 384);
    for (const auto& n : preset_names()) EXPECT_NO_THROW(preset_config(n));
    EXPECT_THROW(preset_config("gpt5"), Error);
}

TEST(ParamLayout, Gpt2SmallHasTheKnownParameterCount) {
    GPTConfig c = preset_config("gpt2-124m");
    c.padded_vocab_size = c.vocab_size;  // the published 124,439,808 counts the real vocabulary
    ParamLayout l(c, 1);
    EXPECT_EQ(l.num_params(), 124439808u);
    EXPECT_EQ(l.total(), l.num_params());
}

TEST(ParamLayout, UnitsAreContiguousPaddedAndNamed) {
    GPTConfig c = preset_config("tiny");
    ParamLayout l(c, 64);
    ASSERT_EQ(l.units().size(), static_cast<size_t>(c.n_layer + 2));
    size_t prev_end = 0;
    for (const auto& u : l.units()) {
        EXPECT_EQ(u.begin, prev_end);
        EXPECT_EQ(u.size() % 64, 0u);
        EXPECT_LE(u.used, u.size());
        prev_end = u.end;
    }
    EXPECT_EQ(prev_end, l.total());
    for (const auto& t : l.tensors()) {
        const auto& u = l.units()[t.unit];
        EXPECT_GE(t.offset, u.begin);
        EXPECT_LE(t.offset + t.numel, u.begin + u.used);
    }
    EXPECT_EQ(l.find("h.1.mlp.c_fc.weight").shape, (std::vector<int>{4 * c.n_embd, c.n_embd}));
    EXPECT_EQ(&l.block_tensor(1, kFcW), &l.find("h.1.mlp.c_fc.weight"));
    EXPECT_TRUE(l.find("wte").decay());
    EXPECT_FALSE(l.find("h.0.ln_1.bias").decay());
    EXPECT_THROW(l.find("h.9.nothing"), Error);
}

TEST(Flops, MatchesTheDesignFormula) {
    GPTConfig c = preset_config("gpt2-124m");
    // N excludes wpe and counts wte once over the real vocabulary: 124,439,808 - 1024*768.
    EXPECT_EQ(matmul_param_count(c), 124439808u - 1024u * 768u);
    FlopsPerToken f = flops_per_token(c, 1024, Recompute::none);
    EXPECT_DOUBLE_EQ(f.model, 6.0 * (124439808.0 - 1024 * 768) + 12.0 * 12 * 768 * 1024);
    EXPECT_DOUBLE_EQ(f.hardware, f.model);
    EXPECT_DOUBLE_EQ(flops_per_token(c, 1024, Recompute::selective).hardware, f.model);
    FlopsPerToken full = flops_per_token(c, 1024, Recompute::full);
    EXPECT_DOUBLE_EQ(full.model, f.model);
    // Every block's forward again but the MLP's output projection (4C^2 + C of each block's 12C^2 + 13C).
    EXPECT_DOUBLE_EQ(full.hardware - full.model, 2.0 * 12 * (8.0 * 768 * 768 + 12.0 * 768) + 4.0 * 12 * 768 * 1024);
}

// The knobs drop or reshape tensors and never rename them; defaults stay GPT-2's layout.
TEST(ParamLayout, KnobsDropAndReshapeTensors) {
    GPTConfig c = preset_config("llama-tiny");  // C 48, 4 heads of 12, 2 kv heads, H = 128
    ASSERT_EQ(c.kv_heads(), 2);
    ASSERT_EQ(c.hidden(), 128);  // 8*48/3 = 128, already a multiple of 64
    ParamLayout l(c);
    EXPECT_EQ(l.pos_emb(), nullptr);
    EXPECT_THROW(l.find("wpe"), Error);
    EXPECT_THROW(l.find("h.0.ln_1.bias"), Error);
    EXPECT_THROW(l.find("h.1.mlp.c_proj.bias"), Error);
    EXPECT_EQ(l.lnf_bias(), nullptr);
    EXPECT_EQ(l.find("h.0.attn.c_attn.weight").shape, (std::vector<int>{48 + 2 * 2 * 12, 48}));
    EXPECT_EQ(l.find("h.0.mlp.c_fc.weight").shape, (std::vector<int>{256, 48}));
    EXPECT_EQ(l.find("h.0.mlp.c_proj.weight").shape, (std::vector<int>{48, 128}));
    const TensorInfo& head = l.find("lm_head.weight");
    EXPECT_EQ(&l.head(), &head);
    EXPECT_EQ(head.unit, 0);  // with wte, so the unit hooks run as for a tied head
    EXPECT_EQ(head.shape, (std::vector<int>{128, 48}));
    const size_t block = 48 + 96 * 48 + 48 * 48 + 48 + 256 * 48 + 48 * 128;
    EXPECT_EQ(l.num_params(), 2 * 128 * 48 + 2 * block + 48);
    // Every 2-D tensor of a block unit is a hidden matrix; the head is not in one.
    for (const auto& t : l.tensors()) {
        const bool matrix = t.name.find("ln_") == std::string::npos;
        if (t.unit >= 1 && t.unit <= c.n_layer) {
            EXPECT_EQ(t.shape.size() == 2, matrix) << t.name;
        }
    }

    GPTConfig g = preset_config("tiny");
    EXPECT_TRUE(g.is_gpt2());
    EXPECT_FALSE(c.is_gpt2());
    ParamLayout gl(g);
    EXPECT_EQ(&gl.head(), &gl.wte());
    g.mlp_hidden = 100;
    EXPECT_EQ(g.non_gpt2_knob(), "--mlp-hidden 100");
    EXPECT_THROW(g.require_gpt2("x", "llm.c model files"), Error);
}

// A record written before the knobs existed reads as GPT-2; a knob record round-trips.
TEST(Config, JsonRoundTripAndOldRecords) {
    GPTConfig t = preset_config("tiny");
    nlohmann::json old = {{"n_layer", 2}, {"n_head", 4}, {"n_embd", 48}, {"vocab_size", 101},
                          {"padded_vocab_size", 128}, {"max_seq_len", 64}};
    EXPECT_EQ(GPTConfig::from_json(old).to_json(), t.to_json());
    EXPECT_TRUE(GPTConfig::from_json(old).is_gpt2());
    for (const auto& n : preset_names()) {
        GPTConfig c = preset_config(n);
        EXPECT_EQ(GPTConfig::from_json(c.to_json()).to_json(), c.to_json()) << n;
        EXPECT_EQ(GPTConfig::from_json(c.to_json()).describe(), c.describe()) << n;
    }
    GPTConfig bad = t;
    bad.n_kv_head = 3;
    EXPECT_THROW(bad.validate("x"), Error);
    bad = t;
    bad.pos = PosKind::rope;
    bad.n_head = 16;  // head size 3
    EXPECT_THROW(bad.validate("x"), Error);
}

// A knob that changes the matmul parameters changes the FLOPs; untying adds parameters, not
// FLOPs (the head was already counted; wte only looks rows up).
TEST(Flops, FollowTheKnobs) {
    GPTConfig g = preset_config("d12");
    const double base = flops_per_token(g, 1024, Recompute::none).model;
    GPTConfig gqa = g;
    gqa.n_kv_head = 4;  // c_attn loses 2*(12-4)*64 rows of 768 (+ bias)
    EXPECT_EQ(matmul_param_count(g) - matmul_param_count(gqa), 12u * (2 * 8 * 64) * (768 + 1));
    EXPECT_DOUBLE_EQ(base - flops_per_token(gqa, 1024, Recompute::none).model, 6.0 * 12 * (2 * 8 * 64) * (768 + 1));
    GPTConfig untied = g;
    untied.tie_embeddings = false;
    EXPECT_EQ(matmul_param_count(untied), matmul_param_count(g));
    EXPECT_EQ(ParamLayout(untied).num_params() - ParamLayout(g).num_params(), size_t(50304) * 768);
    GPTConfig rope = g;
    rope.pos = PosKind::rope;
    EXPECT_EQ(matmul_param_count(rope), matmul_param_count(g));  // wpe never counted
    EXPECT_EQ(ParamLayout(g).num_params() - ParamLayout(rope).num_params(), size_t(1024) * 768);
    GPTConfig sw = g;
    sw.mlp = MlpKind::swiglu;  // H = 2048: fc 2*2048*768 + 2*2048, proj 768*2048 + 768
    EXPECT_EQ(sw.hidden(), 2048);
    EXPECT_EQ(matmul_param_count(sw) - matmul_param_count(g),
              12u * ((3 * 2048 * 768 + 2 * 2048 + 768) - (8 * 768 * 768 + 4 * 768 + 768)));
    FlopsPerToken full = flops_per_token(sw, 1024, Recompute::full);
    EXPECT_GT(full.hardware - full.model, flops_per_token(g, 1024, Recompute::full).hardware -
                                              flops_per_token(g, 1024, Recompute::full).model);
}
