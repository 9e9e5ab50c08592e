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
