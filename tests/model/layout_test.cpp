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
    EXPECT_DOUBLE_EQ(full.hardware - full.model, 2.0 * 12 * (12.0 * 768 * 768 + 13.0 * 768) + 4.0 * 12 * 768 * 1024);
}
