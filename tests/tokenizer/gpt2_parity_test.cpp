// GPT-2 compatibility: the imported tokenizer encodes every fixture case to the ids tiktoken
// (js-tiktoken) gives, and decodes them back to the input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/tokenizer/fixtures.h"
#include "tokenizer/hf_export.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

nlohmann::json expected() { return nlohmann::json::parse(slurp(tokenizer_fixtures() + "/gpt2-expected-ids.json")); }

}  // namespace

TEST(Gpt2Parity, ImportHasGpt2Shape) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    EXPECT_EQ(tok.vocab_size(), 50257u);
    EXPECT_EQ(tok.spec().merges.size(), 50000u);
    EXPECT_EQ(tok.special_id("<|endoftext|>"), std::optional<uint32_t>(50256));
    EXPECT_EQ(tok.special_id("<|nope|>"), std::nullopt);
}

TEST(Gpt2Parity, FixtureFilesEncodeToTiktokenIds) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    nlohmann::json exp = expected();
    for (const char* name : {"address.txt", "german.txt", "tinystories_sample.txt", "corpus.en"}) {
        SCOPED_TRACE(name);
        std::string text = slurp(tokenizer_fixtures() + "/" + name);
        std::vector<uint32_t> ids = tok.encode(text);
        EXPECT_EQ(ids, exp[name].get<std::vector<uint32_t>>());
        EXPECT_EQ(tok.decode(ids), text);
    }
}

TEST(Gpt2Parity, EdgeCasesEncodeToTiktokenIds) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    int cases = 0;
    const nlohmann::json exp = expected();
    for (const auto& [name, c] : exp.items()) {
        if (!c.is_object()) continue;
        SCOPED_TRACE(name);
        std::string text = c["text"].get<std::string>();
        std::vector<uint32_t> ids = tok.encode(text);
        EXPECT_EQ(ids, c["ids"].get<std::vector<uint32_t>>());
        EXPECT_EQ(tok.decode(ids), text);
        cases++;
    }
    EXPECT_EQ(cases, 8);
}

TEST(Gpt2Parity, SpecialTokenIsOneIdOnlyWhenAllowed) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    EXPECT_EQ(tok.encode("a<|endoftext|>b"), (std::vector<uint32_t>{64, 50256, 65}));
    // As ordinary text it is the pieces "<|", "endoftext", "|>".
    EXPECT_EQ(tok.encode_ordinary("<|endoftext|>"), (std::vector<uint32_t>{27, 91, 437, 1659, 5239, 91, 29}));
}

TEST(Gpt2Parity, HuggingFaceExportIsByteLevelBpe) {
    SIXND_NEED_FIXTURES();
    auto j = nlohmann::json::parse(hf_tokenizer_json(*gpt2_tokenizer()));
    EXPECT_EQ(j["model"]["type"], "BPE");
    EXPECT_EQ(j["pre_tokenizer"]["type"], "ByteLevel");
    EXPECT_EQ(j["model"]["vocab"].size(), 50257u);
    EXPECT_EQ(j["model"]["vocab"]["\u0120the"], 262);  // "Ġthe", as in GPT-2's vocab.json
    EXPECT_EQ(j["model"]["merges"][0], "\u0120 t");
    EXPECT_EQ(j["model"]["merges"].size(), 50000u);
    ASSERT_EQ(j["added_tokens"].size(), 1u);
    EXPECT_EQ(j["added_tokens"][0]["content"], "<|endoftext|>");
    EXPECT_EQ(j["added_tokens"][0]["id"], 50256);
}
