// The KV-cache decoder gives, one token at a time, the logits the full forward gives for every
// prefix — for both storage types — and refuses to run past its cache.
#include <gtest/gtest.h>

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

// To the end of the context (the last learned position row, the last rotation), with weights ten
// times GPT-2's so that attention is far from uniform and a cache row read at the wrong position
// shows (an error of order 1); multi-query attention besides the presets' kv heads. The large
// weights also amplify the FP32 roundings in which the two paths differ (3e-5 seen with AMX).
TEST(Decoder, MatchesTheFullForwardToTheEndOfTheContext) {
    for (const char* preset : {"tiny", "llama-tiny", "speedrun-tiny"}) {
        for (int kv : {0, 1}) {
            SCOPED_TRACE(std::string(preset) + " kv heads " + std::to_string(kv));
            GPTConfig c = preset_config(preset);
            if (kv) c.n_kv_head = kv;
            const int T = c.max_seq_len;
            auto tok = test::random_ints(T, 12, 0, c.vocab_size);
            Backend be = make_backend("cpu", DType::f32);
            GPT m(c, *be.ops);
            std::vector<float> p = gpt2_init(m.layout(), c, 6);
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
