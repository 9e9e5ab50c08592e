// Files in and out: the sixnd tokenizer file round trip, GPT-2 import errors that name file
// and line, and nothing half-written when saving fails.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tests/tokenizer/fixtures.h"
#include "tokenizer/hf_export.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer_file.h"

using namespace sixnd;
using namespace sixnd::test;
namespace fs = std::filesystem;

namespace {

class Formats : public ::testing::Test {
protected:
    void SetUp() override { dir_ = make_temp_dir("sixnd-tokfmt-"); }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    // The error message of importing the given vocab.json and merges.txt texts.
    std::string import_error(const std::string& vocab, const std::string& merges) {
        spit(path("vocab.json"), vocab);
        spit(path("merges.txt"), merges);
        try {
            import_gpt2(path("vocab.json"), path("merges.txt"), {"<|endoftext|>"}, resolve_pattern("gpt2"));
        } catch (const Error& e) {
            return e.what();
        }
        return "no error";
    }

    // A complete byte vocabulary (ids 0..255 in GPT-2's printable form) plus extra entries.
    static std::string byte_vocab(const std::string& extra_entries) {
        std::string v = "{\n";
        for (int b = 0; b < 256; b++)
            v += "  " + nlohmann::json(bytes_to_printable(std::string(1, static_cast<char>(b)))).dump() + ": " +
                 std::to_string(b) + ",\n";
        return v + extra_entries + "\n}\n";
    }

    std::string dir_;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_F(Formats, SaveLoadRoundTripKeepsEverything) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    tok.save(path("gpt2.tok"));
    Tokenizer back = Tokenizer::load(path("gpt2.tok"));
    EXPECT_EQ(back.hash(), tok.hash());
    EXPECT_EQ(back.spec().tokens, tok.spec().tokens);
    EXPECT_EQ(back.spec().merges, tok.spec().merges);
    EXPECT_EQ(back.spec().specials, tok.spec().specials);
    std::string text = slurp(tokenizer_fixtures() + "/german.txt");
    EXPECT_EQ(back.encode(text), tok.encode(text));
    auto doc = nlohmann::json::parse(slurp(path("gpt2.tok")));
    EXPECT_EQ(doc["format"], "sixnd-tokenizer");
    EXPECT_EQ(doc["version"], 1);
    EXPECT_EQ(doc["pattern_name"], "gpt2");
    EXPECT_EQ(doc["hash"], tok.hash());
    for (const auto& e : fs::directory_iterator(dir_)) EXPECT_FALSE(contains(e.path().string(), ".tmp")) << e.path();
}

TEST_F(Formats, HashDependsOnContent) {
    SIXND_NEED_FIXTURES();
    TokenizerSpec spec = gpt2_tokenizer()->spec();
    std::string h = gpt2_tokenizer()->hash();
    EXPECT_EQ(h.size(), 32u);
    spec.pattern = resolve_pattern("gpt4");
    EXPECT_NE(Tokenizer::from_spec(spec, "t").hash(), h);
}

TEST_F(Formats, DamagedTokenizerFileIsRejected) {
    SIXND_NEED_FIXTURES();
    gpt2_tokenizer()->save(path("t.tok"));
    std::string text = slurp(path("t.tok"));
    spit(path("edited.tok"), text.replace(text.find("\"!\""), 3, "\"?\""));
    EXPECT_THROW(Tokenizer::load(path("edited.tok")), Error);
    spit(path("v2.tok"), std::string(slurp(path("t.tok"))).replace(text.find("\"version\": 1"), 12, "\"version\": 2"));
    try {
        Tokenizer::load(path("v2.tok"));
        FAIL();
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "version 2 is not supported")) << e.what();
    }
    spit(path("junk.tok"), "{\"format\": \"sixnd-tokenizer\", ");
    EXPECT_THROW(Tokenizer::load(path("junk.tok")), Error);
    EXPECT_THROW(Tokenizer::load(path("missing.tok")), Error);
}

TEST_F(Formats, SaveToAnUnwritablePlaceLeavesNothing) {
    SIXND_NEED_FIXTURES();
    EXPECT_THROW(gpt2_tokenizer()->save(path("no/such/dir/t.tok")), Error);
}

TEST_F(Formats, ImportWorksWithAndWithoutVersionLine) {
    std::string vocab = byte_vocab("  \"ab\": 256,\n  \"<|endoftext|>\": 257");
    EXPECT_EQ(import_error(vocab, "#version: 0.2\na b\n"), "no error");
    EXPECT_EQ(import_error(vocab, "a b"), "no error");
    Tokenizer t = import_gpt2(path("vocab.json"), path("merges.txt"), {"<|endoftext|>"}, resolve_pattern("gpt2"));
    EXPECT_EQ(t.encode("ab<|endoftext|>"), (std::vector<uint32_t>{256, 257}));
}

TEST_F(Formats, MalformedVocabJsonNamesFileAndLine) {
    std::string good = byte_vocab("  \"ab\": 256");
    std::string err = import_error(byte_vocab("  \"ab\" 256"), "a b\n");
    EXPECT_TRUE(contains(err, path("vocab.json") + ":258: expected ':'")) << err;
    err = import_error(byte_vocab("  \"ab\": 25"), "a b\n");
    EXPECT_TRUE(contains(err, ":258: id 25 was already given on line 27")) << err;
    err = import_error(byte_vocab("  \"ab\": 900"), "a b\n");
    EXPECT_TRUE(contains(err, ":258: id 900 is out of range")) << err;
    err = import_error(byte_vocab("  \"a\\u0001\": 256"), "");
    EXPECT_TRUE(contains(err, ":258: token") && contains(err, "byte-to-unicode")) << err;
    err = import_error(good.substr(0, good.size() - 3), "a b\n");
    EXPECT_TRUE(contains(err, path("vocab.json") + ":258")) << err;
    err = import_error("[1, 2]", "");
    EXPECT_TRUE(contains(err, path("vocab.json") + ":1: the file must hold one JSON object")) << err;
}

TEST_F(Formats, MalformedMergesNamesFileAndLine) {
    std::string vocab = byte_vocab("  \"ab\": 256");
    std::string err = import_error(vocab, "#version: 0.2\na b\nab\n");
    EXPECT_TRUE(contains(err, path("merges.txt") + ":3: expected two tokens")) << err;
    err = import_error(vocab, "a b\na  b\n");
    EXPECT_TRUE(contains(err, path("merges.txt") + ":2: expected two tokens")) << err;
    err = import_error(vocab, "a b\nb c\n");
    EXPECT_TRUE(contains(err, path("merges.txt") + ":2: the merged token \"bc\" is not in")) << err;
    err = import_error(vocab, "a zz\n");
    EXPECT_TRUE(contains(err, path("merges.txt") + ":1: token \"zz\" is not in")) << err;
    err = import_error(vocab, "a b\na b\n");
    EXPECT_TRUE(contains(err, path("merges.txt") + ":2: this merge was already given on line 1")) << err;
    // Empty merges suit only a vocabulary of bytes and special tokens: "ab" needs a merge.
    err = import_error(vocab, "");
    EXPECT_TRUE(contains(err, path("merges.txt") + ": has 0 merges, but " + path("vocab.json") + " needs at least 1"))
        << err;
    EXPECT_TRUE(contains(err, "(id 256 \"ab\")")) << err;
    EXPECT_EQ(import_error(byte_vocab("  \"<|endoftext|>\": 256"), ""), "no error");
    fs::remove(path("merges.txt"));
    try {
        import_gpt2(path("vocab.json"), path("merges.txt"), {}, resolve_pattern("gpt2"));
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), path("merges.txt"));
    }
}

TEST_F(Formats, VocabularyMissingAByteIsRejected) {
    std::string v = byte_vocab("  \"ab\": 65");
    v.erase(v.find("  \"A\": 65,\n"), 11);
    std::string err = import_error(v, "");
    EXPECT_TRUE(contains(err, "has no token for byte 0x41 (written \"A\")")) << err;
}

TEST_F(Formats, HuggingFaceExportOfCustomPatternUsesSplit) {
    SIXND_NEED_FIXTURES();
    TokenizerSpec spec = gpt2_tokenizer()->spec();
    spec.pattern = resolve_pattern("gpt4");
    Tokenizer t = Tokenizer::from_spec(spec, "t");
    export_hf_tokenizer_json(t, path("tokenizer.json"));
    auto j = nlohmann::json::parse(slurp(path("tokenizer.json")));
    EXPECT_EQ(j["pre_tokenizer"]["type"], "Sequence");
    EXPECT_EQ(j["pre_tokenizer"]["pretokenizers"][0]["type"], "Split");
    EXPECT_EQ(j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"], spec.pattern);
    EXPECT_EQ(j["pre_tokenizer"]["pretokenizers"][1]["use_regex"], false);
}
