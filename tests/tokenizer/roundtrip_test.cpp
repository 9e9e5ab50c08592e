// Encode/decode round trips on hostile input, special-token handling, and encoding from many
// threads at once with one tokenizer.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "core/error.h"
#include "tests/tokenizer/fixtures.h"
#include "tokenizer/utf8.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

std::string random_bytes(std::mt19937_64& rng, size_t n) {
    std::string s(n, '\0');
    // Half the time mostly text-like bytes, so merges fire; otherwise anything at all.
    bool texty = rng() & 1;
    for (auto& c : s) {
        uint64_t r = rng();
        c = static_cast<char>(texty && (r & 3) ? " etaoinshrdlu\n'0123456789.,!\xc3\xa9"[(r >> 8) % 28] : (r >> 16) & 0xFF);
    }
    return s;
}

// A small tokenizer with overlapping special tokens, built directly from a spec.
Tokenizer tiny_with_specials() {
    TokenizerSpec spec;
    spec.pattern = resolve_pattern("gpt2");
    for (int b = 0; b < 256; b++) spec.tokens.emplace_back(1, static_cast<char>(b));
    spec.tokens.push_back("ab");
    spec.merges.push_back({'a', 'b'});
    for (const char* s : {"<|a|>", "<|a|><|a|>", "<|b"}) {
        spec.specials.emplace_back(s, static_cast<uint32_t>(spec.tokens.size()));
        spec.tokens.push_back(s);
    }
    return Tokenizer::from_spec(spec, "test");
}

}  // namespace

TEST(RoundTrip, RandomBytesIncludingInvalidUtf8) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    std::mt19937_64 rng(1234);
    for (int i = 0; i < 300; i++) {
        std::string s = random_bytes(rng, rng() % 200);
        std::vector<uint32_t> ids = tok.encode_ordinary(s);
        ASSERT_EQ(tok.decode(ids), s) << "case " << i;
        for (uint32_t id : ids) ASSERT_LT(id, 50256u);
    }
}

TEST(RoundTrip, RandomSpecialTokenPlacement) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    std::mt19937_64 rng(99);
    for (int i = 0; i < 200; i++) {
        std::string s;
        size_t specials = 0;
        for (int part = 0; part < 5; part++) {
            if (rng() % 2) {
                s += "<|endoftext|>";
                specials++;
            }
            s += random_bytes(rng, rng() % 30);
        }
        std::vector<uint32_t> ids = tok.encode(s);
        ASSERT_EQ(tok.decode(ids), s);
        size_t seen = 0;
        for (uint32_t id : ids) seen += id == 50256;
        ASSERT_EQ(seen, specials) << "case " << i;
    }
}

TEST(RoundTrip, EmptyInput) {
    SIXND_NEED_FIXTURES();
    EXPECT_TRUE(gpt2_tokenizer()->encode("").empty());
    EXPECT_EQ(gpt2_tokenizer()->decode({}), "");
}

TEST(RoundTrip, LongestSpecialTokenWins) {
    Tokenizer tok = tiny_with_specials();
    const uint32_t a = 257, aa = 258, b = 259;
    EXPECT_EQ(tok.encode("<|a|><|a|>"), std::vector<uint32_t>{aa});
    EXPECT_EQ(tok.encode("<|a|><|a|><|a|>"), (std::vector<uint32_t>{aa, a}));
    EXPECT_EQ(tok.encode("x<|a|>ab<|b"), (std::vector<uint32_t>{'x', a, 256, b}));
    EXPECT_EQ(tok.decode(tok.encode("<|a|<|a|>")), "<|a|<|a|>");
    EXPECT_EQ(tok.encode_ordinary("<|b"), (std::vector<uint32_t>{'<', '|', 'b'}));
}

TEST(RoundTrip, VeryLongPieces) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    // Each is one GPT-2 piece, far longer than the pre-token cache or the short BPE path takes.
    for (std::string s : {std::string(5000, ' '), std::string(3000, 'a') + "bc", std::string(1000, '-')})
        EXPECT_EQ(tok.decode(tok.encode(s)), s);
}

TEST(RoundTrip, DecodeRejectsIdsOutsideTheVocabulary) {
    Tokenizer tok = tiny_with_specials();
    EXPECT_THROW(tok.decode({0, 260}), Error);
}

TEST(RoundTrip, DecodeTextReplacesInvalidUtf8) {
    Tokenizer tok = tiny_with_specials();
    std::vector<uint32_t> ids = tok.encode("ok\xff\xe2\x82 \xe2\x82\xac");
    EXPECT_EQ(tok.decode(ids), "ok\xff\xe2\x82 \xe2\x82\xac");
    EXPECT_EQ(tok.decode_text(ids), "ok\xEF\xBF\xBD\xEF\xBF\xBD \xe2\x82\xac");
}

TEST(RoundTrip, ValidUtf8IsTheTextDecodeTextKeeps) {
    for (const char* ok : {"", "plain", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xef\xbf\xbd"})
        EXPECT_TRUE(valid_utf8(ok)) << ok;
    // A lone byte, a cut-off sequence, an overlong '/', a surrogate, past U+10FFFF.
    for (const char* bad : {"\xff", "ok\xe2\x82", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
        EXPECT_FALSE(valid_utf8(bad)) << bad;
        EXPECT_NE(replace_invalid_utf8(bad), bad);
    }
}

TEST(RoundTrip, ManyThreadsEncodeAlike) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    std::vector<std::string> texts;
    std::mt19937_64 rng(7);
    std::string corpus = slurp(tokenizer_fixtures() + "/tinystories_sample.txt");
    for (int i = 0; i < 64; i++) texts.push_back(corpus.substr(rng() % corpus.size(), 600) + random_bytes(rng, 50));
    std::vector<std::vector<uint32_t>> want;
    for (const auto& t : texts) want.push_back(tok.encode(t));

    Tokenizer copy = tok;  // copies share state; both must be safe to use at once
    std::vector<int> bad(4, 0);
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; k++)
        threads.emplace_back([&, k] {
            const Tokenizer& t = k % 2 ? copy : tok;
            for (int round = 0; round < 5; round++)
                for (size_t i = 0; i < texts.size(); i++) bad[k] += t.encode(texts[(i * (k + 1)) % texts.size()]) != want[(i * (k + 1)) % texts.size()];
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad, std::vector<int>(4, 0));
}
