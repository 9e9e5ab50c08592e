// BPE training: the corpus.en reference reproduced exactly, the merge bookkeeping on cases that
// trip up incremental updates, and streaming counting (and encoding) equal to one pass.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "tests/tokenizer/fixtures.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/stream_encoder.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

BpeTrainOptions options(size_t vocab, std::vector<std::string> specials = {}) {
    BpeTrainOptions o;
    o.vocab_size = vocab;
    o.specials = std::move(specials);
    o.pattern = resolve_pattern("gpt2");
    o.threads = 2;
    return o;
}

Tokenizer train_text(const std::string& text, const BpeTrainOptions& opt) {
    const TempDir tmp("sixnd-bpe-");
    const std::string& dir = tmp.dir;
    spit(dir + "/in.txt", text);
    return train_bpe({{dir + "/in.txt"}}, opt);
}

std::vector<std::string> merge_strings(const Tokenizer& t) {
    std::vector<std::string> out;
    for (auto [a, b] : t.spec().merges) out.push_back(t.spec().tokens[a] + "|" + t.spec().tokens[b]);
    return out;
}

// Recounts every pair from scratch and picks the best, the slow way, for cross-checking; pairs
// longer than max_bytes together (0: no limit) are passed over.
std::vector<std::string> naive_merges(const std::map<std::string, int64_t>& words, size_t n, size_t max_bytes = 0) {
    std::vector<std::pair<std::vector<std::string>, int64_t>> ws;
    for (const auto& [w, c] : words) {
        std::vector<std::string> syms;
        for (char ch : w) syms.emplace_back(1, ch);
        ws.push_back({syms, c});
    }
    std::vector<std::string> merges;
    for (size_t m = 0; m < n; m++) {
        std::map<std::pair<std::string, std::string>, int64_t> counts;
        for (const auto& [s, c] : ws)
            for (size_t i = 0; i + 1 < s.size(); i++)
                if (max_bytes == 0 || s[i].size() + s[i + 1].size() <= max_bytes) counts[{s[i], s[i + 1]}] += c;
        if (counts.empty()) break;
        auto best = counts.begin();
        for (auto it = counts.begin(); it != counts.end(); ++it)
            if (it->second > best->second || (it->second == best->second && it->first > best->first)) best = it;
        auto [a, b] = best->first;
        merges.push_back(a + "|" + b);
        for (auto& [s, c] : ws) {
            std::vector<std::string> out;
            for (size_t i = 0; i < s.size(); i++) {
                if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
                    out.push_back(a + b);
                    i++;
                } else {
                    out.push_back(s[i]);
                }
            }
            s = out;
        }
    }
    return merges;
}

}  // namespace

TEST(BpeTrain, ReproducesCorpusEnReferenceMergesInOrder) {
    SIXND_NEED_FIXTURES();
    std::string dir = tokenizer_fixtures();
    Tokenizer t = train_bpe({{dir + "/corpus.en"}}, options(500, {"<|endoftext|>"}));

    std::vector<std::string> ref;
    std::ifstream in(dir + "/train-bpe-reference-merges.txt");
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) ref.push_back(line);
    ASSERT_EQ(ref.size(), 243u);
    ASSERT_EQ(t.spec().merges.size(), ref.size());
    const auto& tokens = t.spec().tokens;
    for (size_t r = 0; r < ref.size(); r++) {
        auto [a, b] = t.spec().merges[r];
        ASSERT_EQ(bytes_to_printable(tokens[a]) + " " + bytes_to_printable(tokens[b]), ref[r]) << "merge " << r;
    }

    auto vocab = nlohmann::json::parse(slurp(dir + "/train-bpe-reference-vocab.json"));
    std::set<std::string> want, got;
    for (const auto& [k, v] : vocab.items()) want.insert(k);
    for (const auto& tok : tokens) got.insert(bytes_to_printable(tok));
    EXPECT_EQ(t.vocab_size(), 500u);
    EXPECT_EQ(got, want);
    EXPECT_EQ(t.special_id("<|endoftext|>"), std::optional<uint32_t>(499));
}

TEST(BpeTrain, StreamingInSmallChunksEqualsOnePass) {
    SIXND_NEED_FIXTURES();
    std::string corpus = tokenizer_fixtures() + "/corpus.en";
    BpeTrainOptions whole = options(600, {"<|endoftext|>"});
    whole.chunk_bytes = size_t(1) << 30;
    whole.threads = 1;
    BpeTrainOptions pieces = whole;
    pieces.chunk_bytes = 4096;
    pieces.threads = 3;
    EXPECT_EQ(train_bpe({{corpus}}, whole).hash(), train_bpe({{corpus}}, pieces).hash());
}

// No cut inside a file is safe for every regex: "(?s).." pairs bytes from the file's start, so
// any cut at an odd offset would shift every pair after it. Training and encoding read each file
// whole under a custom pattern, whatever the chunk size.
TEST(BpeTrain, CustomPatternInSmallChunksEqualsOnePass) {
    SIXND_NEED_FIXTURES();
    std::string text = slurp(tokenizer_fixtures() + "/corpus.en");
    const TempDir tmp("sixnd-bpe-");
    const std::string& dir = tmp.dir;
    spit(dir + "/in.txt", text);
    BpeTrainOptions whole = options(400);
    whole.pattern = "(?s)..";
    whole.chunk_bytes = size_t(1) << 30;
    BpeTrainOptions pieces = whole;
    pieces.chunk_bytes = 1001;
    Tokenizer t = train_bpe({{dir + "/in.txt"}}, whole);
    EXPECT_EQ(t.hash(), train_bpe({{dir + "/in.txt"}}, pieces).hash());

    std::vector<uint32_t> streamed;
    encode_stream(t, {{dir + "/in.txt"}}, 2, 1001,
                  [&](const std::vector<uint32_t>& ids) { streamed.insert(streamed.end(), ids.begin(), ids.end()); });
    EXPECT_EQ(streamed, t.encode(text));
}

TEST(BpeTrain, OverlappingAndRepeatedPairsMatchNaiveRecount) {
    // Runs of one letter ("aaaa"), alternations ("abab") and pairs that meet themselves are
    // where incremental pair updates go wrong.
    std::string text;
    std::map<std::string, int64_t> words;
    const char* pieces[] = {"aaaa", "aaaaa", "abab", "ababab", "aab", "baa", "abba", "bbbb", "abaab", "ba"};
    for (int i = 0; i < 10; i++)
        for (int rep = 0; rep <= i; rep++) {
            text += std::string(pieces[i]) + "\n";
            words[pieces[i]]++;
        }
    Tokenizer t = train_text(text, options(256 + 12));
    std::map<std::string, int64_t> multi;
    for (const auto& [w, c] : words)
        if (w.size() > 1) multi[w] = c;
    EXPECT_EQ(merge_strings(t), naive_merges(multi, 12));
}

// Runs of one character merged into tokens as long as the run. With a limit, the merges are the
// naive recount's over the pairs that fit, and no token is longer.
TEST(BpeTrain, MaxTokenBytesPassesOverLongerPairs) {
    std::string text;
    std::map<std::string, int64_t> words;
    const char* pieces[] = {"================", "aaaaaaaaa", "abcabcabc", "ab", "abc"};
    for (int i = 0; i < 5; i++)
        for (int rep = 0; rep <= i; rep++) {
            text += std::string(pieces[i]) + "\n";
            words[pieces[i]]++;
        }
    for (size_t limit : {2, 3, 5}) {
        BpeTrainOptions o = options(256 + 10);
        o.max_token_bytes = limit;
        Tokenizer t = train_text(text, o);
        EXPECT_EQ(merge_strings(t), naive_merges(words, 10, limit)) << limit;
        for (const std::string& tok : t.spec().tokens) EXPECT_LE(tok.size(), limit) << tok;
    }
    Tokenizer unlimited = train_text(text, options(256 + 10));
    size_t longest = 0;
    for (const std::string& tok : unlimited.spec().tokens) longest = std::max(longest, tok.size());
    EXPECT_GT(longest, 5u);
}

TEST(BpeTrain, EqualCountsGoToTheGreaterPair) {
    // ("a","b"), (" ","c") and ("c","d") all occur twice; ("c","d") is the greatest. Then
    // (" ","cd") and ("a","b") tie, and "a" > " ".
    Tokenizer t = train_text("ab cd ab cd", options(258));
    EXPECT_EQ(merge_strings(t), (std::vector<std::string>{"c|d", "a|b"}));
}

TEST(BpeTrain, SpecialTokensAreCutOutAndGetTheLastIds) {
    Tokenizer t = train_text("xy<|end|>xy<|end|>xy", options(258, {"<|end|>"}));
    EXPECT_EQ(merge_strings(t), std::vector<std::string>{"x|y"});
    EXPECT_EQ(t.special_id("<|end|>"), std::optional<uint32_t>(257));
    EXPECT_EQ(t.encode("xy<|end|>"), (std::vector<uint32_t>{256, 257}));
}

TEST(BpeTrain, VocabularyBelowBytesPlusSpecialsIsRejected) {
    try {
        train_text("hello", options(256, {"<|endoftext|>"}));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("below the 256 byte tokens plus 1 special"), std::string::npos) << e.what();
    }
}

TEST(BpeTrain, StopsEarlyWhenPairsRunOut) {
    Tokenizer t = train_text("ab", options(1000));
    EXPECT_EQ(t.vocab_size(), 257u);
}

TEST(BpeTrain, InputWithNoPairToMergeIsRejectedNamingIt) {
    const TempDir tmp("sixnd-bpe-");
    const std::string& dir = tmp.dir;
    spit(dir + "/empty.txt", "");
    spit(dir + "/specials.txt", "<|end|><|end|>");
    try {
        train_bpe({{dir + "/empty.txt"}}, options(300));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), dir + "/empty.txt");
        EXPECT_EQ(e.fault(), "holds no text to learn merges from (an empty file?)");
    }
    try {
        train_bpe({{dir + "/empty.txt"}, {dir + "/specials.txt"}}, options(300, {"<|end|>"}));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), dir + "/empty.txt, " + dir + "/specials.txt");
        EXPECT_EQ(e.fault(), "the inputs hold no text to learn merges from (only single characters and special tokens)");
    }
    // A file that is not empty is not guessed to be one (it was, when it held only specials).
    try {
        train_bpe({{dir + "/specials.txt"}}, options(300, {"<|end|>"}));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "holds no text to learn merges from (only single characters and special tokens)");
    }
}

// A caller holding out a file's tail trains on a range of it: a file of text whose every byte, or
// every byte of text, was held out used to be called "an empty file?" or a file of "only single
// characters and special tokens".
TEST(BpeTrain, InputWithTextOnlyInItsHeldOutPartSaysSo) {
    const TempDir tmp("sixnd-bpe-");
    const std::string path = tmp.dir + "/in.txt";
    spit(path, "<|end|>abcdq");
    try {
        train_bpe({{path, 0, 0}}, options(300, {"<|end|>"}));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), path);
        EXPECT_EQ(e.fault(), "holds no text to learn merges from: all of its 12 bytes are held out");
    }
    try {
        train_bpe({{path, 0, 7}}, options(300, {"<|end|>"}));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "holds no text to learn merges from (only single characters and special tokens) in the 7 "
                             "of its 12 bytes trained on (the rest is held out)");
    }
}

TEST(BpeTrain, UnreadableInputNamesTheFile) {
    try {
        train_bpe({{"/nonexistent/sixnd-input.txt"}}, options(300));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), "/nonexistent/sixnd-input.txt");
    }
}
