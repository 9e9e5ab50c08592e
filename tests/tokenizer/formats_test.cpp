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

    const TempDir tmp_{"sixnd-tokfmt-"};
    const std::string& dir_ = tmp_.dir;
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The 256 bytes, "ab" (from a merge) and <|endoftext|>: a whole tokenizer without the fixtures.
TokenizerSpec small_spec() {
    TokenizerSpec spec;
    spec.pattern = resolve_pattern("gpt2");
    for (int b = 0; b < 256; b++) spec.tokens.emplace_back(1, static_cast<char>(b));
    spec.tokens.push_back("ab");
    spec.merges.push_back({'a', 'b'});
    spec.specials.emplace_back("<|endoftext|>", 257);
    spec.tokens.push_back("<|endoftext|>");
    return spec;
}

void add_special(TokenizerSpec& spec, const std::string& text) {
    spec.specials.emplace_back(text, static_cast<uint32_t>(spec.tokens.size()));
    spec.tokens.push_back(text);
}

// The error from_spec throws for spec, or "no error".
std::string spec_error(const TokenizerSpec& spec) {
    try {
        Tokenizer::from_spec(spec, "t");
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

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

TEST_F(Formats, JsonThatIsNoTokenizerFileIsNamedSo) {
    // GPT-2's vocab.json maps the word "format" to an id.
    for (const char* text : {"{\"format\": 18982, \"the\": 1169}", "{\"format\": [1]}", "[1, 2]", "{}"}) {
        spit(path("x.json"), text);
        try {
            Tokenizer::load(path("x.json"));
            ADD_FAILURE() << text << " loaded";
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), path("x.json")) << e.what();
            EXPECT_TRUE(contains(e.what(), "not a sixnd tokenizer file")) << e.what();
        }
    }
}

TEST_F(Formats, VersionBeyondIntAndHashOfAnotherTypeAreRefused) {
    Tokenizer::from_spec(small_spec(), "t").save(path("t.tok"));
    const auto doc = nlohmann::json::parse(slurp(path("t.tok")));
    auto load_error = [&](const nlohmann::json& edited) {
        spit(path("edited.tok"), edited.dump());
        try {
            Tokenizer::load(path("edited.tok"));
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), path("edited.tok"));
            return std::string(e.what());
        }
        return std::string("no error");
    };
    auto edited = doc;
    edited["version"] = 1099511627777ULL;  // 2^40 + 1: 1 in an int
    EXPECT_TRUE(contains(load_error(edited), "version 1099511627777 is not supported")) << load_error(edited);
    edited = doc;
    edited["hash"] = 5;
    EXPECT_TRUE(contains(load_error(edited), "field \"hash\" has the wrong type")) << load_error(edited);
    edited.erase("hash");
    EXPECT_EQ(load_error(edited), "no error");
}

TEST_F(Formats, SpecialSpeltLikeAnOrdinaryTokenIsRefused) {
    for (const auto& [text, ordinary] : std::vector<std::pair<std::string, int>>{{"a", 97}, {"ab", 256}}) {
        TokenizerSpec spec = small_spec();
        add_special(spec, text);
        const std::string err = spec_error(spec);
        EXPECT_TRUE(contains(err, "special token '" + text + "' (id 258) is spelt like ordinary token " +
                                      std::to_string(ordinary)))
            << err;
        // A file written so before this was refused is refused on load, naming it.
        spit(path("twin.tok"), tokenizer_file_text(spec, ""));
        try {
            Tokenizer::load(path("twin.tok"));
            ADD_FAILURE() << text;
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), path("twin.tok")) << e.what();
        }
    }
}

TEST_F(Formats, SpecialThatIsNotUtf8IsRefused) {
    TokenizerSpec spec = small_spec();
    add_special(spec, "<|\xff|>");
    const std::string err = spec_error(spec);
    EXPECT_TRUE(contains(err, "is not valid UTF-8")) << err;
}

TEST_F(Formats, ImportRefusesASpecialSpeltLikeAnOrdinaryToken) {
    // "Ġa" is vocab.json's spelling of the bytes " a".
    spit(path("vocab.json"), byte_vocab("  \"ab\": 256,\n  \"\u0120a\": 257,\n  \"<|endoftext|>\": 258"));
    spit(path("merges.txt"), "a b\n\u0120 a\n");
    auto import_with = [&](const std::string& special) {
        try {
            import_gpt2(path("vocab.json"), path("merges.txt"), {"<|endoftext|>", special}, resolve_pattern("gpt2"));
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), "--special") << e.what();
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // An entry a merge makes, an entry of one byte, and new text with the bytes of an entry.
    EXPECT_TRUE(contains(import_with("ab"), "\"ab\" is spelt like ordinary token id 256")) << import_with("ab");
    EXPECT_TRUE(contains(import_with("\u0120"), "ordinary token id 32")) << import_with("\u0120");
    EXPECT_TRUE(contains(import_with(" a"), "\" a\" is spelt like ordinary token id 257 \"\u0120a\"")) << import_with(" a");
    EXPECT_EQ(import_with("<|pad|>"), "no error");
}

// --hf-out and export-hf replace only a tokenizer.json sixnd wrote: its own text is known by its
// head, another JSON object with a "version" (a package.json) is not.
// "pattern" holds the regex; a name or another bare word there would split no text at all.
TEST_F(Formats, PatternThatIsANameIsRefused) {
    Tokenizer::from_spec(small_spec(), "t").save(path("t.tok"));
    auto doc = nlohmann::json::parse(slurp(path("t.tok")));
    doc.erase("hash");
    for (const char* pattern : {"gpt2", "cl100k", "words"}) {
        doc["pattern"] = pattern;
        spit(path("edited.tok"), doc.dump());
        try {
            Tokenizer::load(path("edited.tok"));
            ADD_FAILURE() << pattern << " loaded";
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), path("edited.tok"));
            EXPECT_TRUE(contains(e.what(), pattern)) << e.what();
        }
    }
    doc["pattern"] = "(?:words)";
    spit(path("edited.tok"), doc.dump());
    EXPECT_EQ(Tokenizer::load(path("edited.tok")).spec().pattern, "(?:words)");
}

TEST_F(Formats, HuggingFaceExportIsKnownByItsHead) {
    TokenizerSpec no_specials = small_spec();
    no_specials.specials.clear();
    for (const TokenizerSpec& spec : {small_spec(), no_specials})
        EXPECT_TRUE(hf_tokenizer_json_head(hf_tokenizer_json(Tokenizer::from_spec(spec, "t")).substr(0, 256)));
    EXPECT_FALSE(hf_tokenizer_json_head("{\n  \"name\": \"mypkg\",\n  \"version\": \"1.2.3\"\n}\n"));
    EXPECT_FALSE(hf_tokenizer_json_head("{\"version\": \"1.0\"}"));
    EXPECT_FALSE(hf_tokenizer_json_head(""));
}

TEST_F(Formats, HuggingFaceExportRefusesAKeyGivenTwice) {
    // A special "Ġa" is written as its text, the ordinary " a" through the byte table: both "Ġa".
    TokenizerSpec spec = small_spec();
    spec.tokens.push_back(" a");
    spec.merges.push_back({' ', 'a'});
    add_special(spec, "\u0120a");
    Tokenizer t = Tokenizer::from_spec(spec, "t");
    try {
        hf_tokenizer_json(t);
        FAIL() << "exported";
    } catch (const Error& e) {
        EXPECT_TRUE(contains(e.what(), "special token \"\u0120a\" (id 259) is how it writes ordinary token 258")) << e.what();
    }
}
