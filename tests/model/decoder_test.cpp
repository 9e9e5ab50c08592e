// The KV-cache decoder gives, one token at a time, the logits the full forward gives for every
// prefix — for both storage types — and refuses to run past its cache.
#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "model/backend.h"
#include "model/decoder.h"
#include "model/gpt.h"
#include "model/init.h"
#include "tests/util/test_util.h"

using namespace sixnd;

// Also for the knob presets: rope at the decoded position, shared kv heads in the cache, qk-norm.
TEST(Decoder, MatchesTheFullForwardAtEveryPosition) {
    for (const char* preset : {"tiny", "llama-tiny", "speedrun-tiny"}) {
        SCOPED_TRACE(preset);
        GPTConfig c = preset_config(preset);
        const int T = 13;
        auto tok = test::random_ints(T, 11, 0, c.vocab_size);
        for (DType dt : {DType::f32, DType::bf16}) {
            Backend be = make_backend("cpu", dt);
            GPT m(c, *be.ops);
            m.set_params(gpt2_init(m.layout(), c, 5));
            m.forward(tok.data(), nullptr, 1, T);
            std::vector<float> full = m.get_logits();
            Decoder dec(m, 16);
            for (int t = 0; t < T; t++) {
                std::vector<float> step = dec.step(tok[t]);
                std::vector<float> row(full.begin() + size_t(t) * c.vocab_size, full.begin() + size_t(t + 1) * c.vocab_size);
                // BF16 rounds the cached rows the same way the full pass rounds its activations;
                // only the matmul blocking (N = 1 against N = T) differs.
                EXPECT_LT(test::rel_error(step, row), dt == DType::f32 ? 1e-5 : 2e-2) << dtype_name(dt) << " position " << t;
            }
            EXPECT_EQ(dec.position(), T);
        }
    }
}

namespace {

// To the end of the context (the last learned position row, the last rotation), with weights ten
// times GPT-2's so that attention is far from uniform and a cache row read at the wrong position
// shows (an error of order 1). The large weights also amplify the FP32 roundings in which the two
// paths differ (3e-5 seen with AMX).
void expect_decoder_matches_to_the_end(const GPTConfig& c, uint64_t seed) {
    const int T = c.max_seq_len;
    auto tok = test::random_ints(T, seed, 0, c.vocab_size);
    Backend be = make_backend("cpu", DType::f32);
    GPT m(c, *be.ops);
    std::vector<float> p = gpt2_init(m.layout(), c, seed);
    for (float& x : p) x *= 10;
    m.set_params(p);
    m.forward(tok.data(), nullptr, 1, T);
    std::vector<float> full = m.get_logits();
    Decoder dec(m, T);
    for (int t = 0; t < T; t++) {
        std::vector<float> step = dec.step(tok[t]);
        std::vector<float> row(full.begin() + size_t(t) * c.vocab_size, full.begin() + size_t(t + 1) * c.vocab_size);
        ASSERT_LT(test::rel_error(step, row), 1e-3) << "position " << t;
    }
}

}  // namespace

// The presets, and multi-query attention besides their kv heads.
TEST(Decoder, MatchesTheFullForwardToTheEndOfTheContext) {
    for (const char* preset : {"tiny", "llama-tiny", "speedrun-tiny"}) {
        for (int kv : {0, 1}) {
            SCOPED_TRACE(std::string(preset) + " kv heads " + std::to_string(kv));
            GPTConfig c = preset_config(preset);
            if (kv) c.n_kv_head = kv;
            expect_decoder_matches_to_the_end(c, 12);
        }
    }
}

// Every knob alone, and combinations the presets never make (learned positions with qk-norm, a
// LayerNorm without biases, an untied head with learned positions, a custom swiglu width): the
// decoder reads each tensor the knob adds or removes as the full forward does.
TEST(Decoder, MatchesTheFullForwardForEveryKnob) {
    struct Knobs {
        const char* name;
        std::function<void(GPTConfig&)> set;
    };
    const std::vector<Knobs> cases = {
        {"rope", [](GPTConfig& c) { c.pos = PosKind::rope; }},
        {"rope theta 500", [](GPTConfig& c) { c.pos = PosKind::rope, c.rope_theta = 500; }},
        {"rmsnorm", [](GPTConfig& c) { c.norm = NormKind::rmsnorm; }},
        {"swiglu", [](GPTConfig& c) { c.mlp = MlpKind::swiglu; }},
        {"swiglu hidden 40", [](GPTConfig& c) { c.mlp = MlpKind::swiglu, c.mlp_hidden = 40; }},
        {"relu2", [](GPTConfig& c) { c.mlp = MlpKind::relu2; }},
        {"gelu hidden 72", [](GPTConfig& c) { c.mlp_hidden = 72; }},
        {"qk-norm", [](GPTConfig& c) { c.qk_norm = true; }},
        {"kv heads 2", [](GPTConfig& c) { c.n_kv_head = 2; }},
        {"untied", [](GPTConfig& c) { c.tie_embeddings = false; }},
        {"no bias", [](GPTConfig& c) { c.bias = false; }},
        {"qk-norm, mqa, relu2, untied, no bias",
         [](GPTConfig& c) { c.qk_norm = true, c.n_kv_head = 1, c.mlp = MlpKind::relu2, c.tie_embeddings = false, c.bias = false; }},
    };
    for (const Knobs& k : cases) {
        SCOPED_TRACE(k.name);
        GPTConfig c = preset_config("tiny");
        k.set(c);
        c.validate("test");
        expect_decoder_matches_to_the_end(c, 13);
    }
}

TEST(Decoder, FullCacheIsAnError) {
    GPTConfig c = preset_config("tiny");
    Backend be = make_backend("cpu", DType::f32);
    GPT m(c, *be.ops);
    Decoder dec(m, 2);
    dec.step(1);
    dec.step(2);
    EXPECT_THROW(dec.step(3), Error);
    EXPECT_THROW(Decoder(m, c.max_seq_len + 1), Error);
}
