// Each Gopher repetition rule, in isolation (the others switched off), on documents built to
// sit exactly on its threshold (kept) and one step past it (removed).
#include "data/repetition_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

using sixnd::data::gopher_repetition;
using sixnd::data::RepetitionOptions;

namespace {

RepetitionOptions none() {
    RepetitionOptions o;
    o.max_dup_line_frac = o.max_dup_para_frac = o.max_dup_line_char_frac = o.max_dup_para_char_frac = 1;
    o.top_ngram.clear();
    o.dup_ngram.clear();
    return o;
}

// A distinct word of len >= 4 letters, starting with "f", never equal to another call's.
std::string unique_word(size_t len) {
    static unsigned counter = 0;
    unsigned c = counter++;
    std::string w = "f";
    for (int i = 0; i < 3; i++, c /= 26) w += static_cast<char>('a' + c % 26);
    while (w.size() < len) w += 'z';
    return w;
}

// Distinct filler words of 4 letters (the last one longer) totalling exactly chars letters.
std::vector<std::string> filler(size_t chars) {
    std::vector<std::string> w;
    while (chars >= 8) w.push_back(unique_word(4)), chars -= 4;
    w.push_back(unique_word(chars));
    return w;
}

std::string join(const std::vector<std::string>& w, const char* sep = " ") {
    std::string s;
    for (size_t i = 0; i < w.size(); i++) s += (i ? sep : "") + w[i];
    return s;
}

std::string lines_with_dups(size_t unique, size_t copies, const char* sep) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < unique; i++) parts.push_back(join(filler(20)));
    for (size_t i = 0; i < copies; i++) parts.push_back("the same line again");
    return join(parts, sep);
}

}  // namespace

TEST(RepetitionFilter, DupLineFrac) {
    auto o = none();
    o.max_dup_line_frac = 0.3;
    EXPECT_EQ(gopher_repetition(lines_with_dups(13, 7, "\n"), o), "");  // 6 repeats of 20 lines
    EXPECT_EQ(gopher_repetition(lines_with_dups(13, 8, "\n"), o), "dup_line_frac");
}

TEST(RepetitionFilter, DupParaFrac) {
    auto o = none();
    o.max_dup_para_frac = 0.3;
    EXPECT_EQ(gopher_repetition(lines_with_dups(13, 7, "\n\n"), o), "");
    EXPECT_EQ(gopher_repetition(lines_with_dups(13, 8, "\n \n"), o), "dup_para_frac");  // a blank line may hold spaces
}

TEST(RepetitionFilter, DupLineCharFrac) {
    auto o = none();
    o.max_dup_line_char_frac = 0.2;
    // Lines of 13, 14, 10, 10 bytes and 3 newlines: 10 of 50 bytes repeat.
    EXPECT_EQ(gopher_repetition("aaaaaaaaaaaaa\nbbbbbbbbbbbbbb\ncccccccccc\ncccccccccc", o), "");
    EXPECT_EQ(gopher_repetition("aaaaaaaaaaaa\nbbbbbbbbbbbbbb\ncccccccccc\ncccccccccc", o), "dup_line_char_frac");
}

TEST(RepetitionFilter, DupParaCharFrac) {
    auto o = none();
    o.max_dup_para_char_frac = 0.2;
    // Paragraphs of 12, 12, 10 and 10 bytes and three 2-byte separators: 10 of 50 bytes repeat.
    std::string c(10, 'c');
    EXPECT_EQ(gopher_repetition(std::string(12, 'a') + "\n\n" + std::string(12, 'b') + "\n\n" + c + "\n\n" + c, o), "");
    EXPECT_EQ(gopher_repetition(std::string(11, 'a') + "\n\n" + std::string(12, 'b') + "\n\n" + c + "\n\n" + c, o),
              "dup_para_char_frac");
}

// Builds: [gram, filler...] repeated `copies` times; the gram's words total gram_chars letters
// and all word letters total `total`.
static std::string repeated_gram(int n, size_t gram_chars, int copies, size_t total) {
    std::vector<std::string> gram;
    for (int i = 0; i < n; i++) {
        size_t len = gram_chars / n + (static_cast<size_t>(i) < gram_chars % n ? 1 : 0);
        std::string w = "g" + std::string(1, static_cast<char>('a' + i));
        while (w.size() < len) w += 'x';
        gram.push_back(w);
    }
    auto fill = filler(total - gram_chars * copies);
    std::vector<std::string> words;
    size_t per = fill.size() / copies;
    for (int c = 0; c < copies; c++) {
        words.insert(words.end(), gram.begin(), gram.end());
        auto b = fill.begin() + c * per, e = c + 1 == copies ? fill.end() : b + per;
        words.insert(words.end(), b, e);
    }
    return join(words);
}

TEST(RepetitionFilter, TopNgramCharFrac) {
    struct Case { int n; double t; int copies; size_t gram_chars; };
    // copies x gram_chars = t x 100 word letters.
    for (Case c : {Case{2, 0.20, 5, 4}, Case{3, 0.18, 3, 6}, Case{4, 0.16, 2, 8}}) {
        auto o = none();
        o.top_ngram = {{c.n, c.t}};
        EXPECT_EQ(gopher_repetition(repeated_gram(c.n, c.gram_chars, c.copies, 100), o), "") << c.n;
        EXPECT_EQ(gopher_repetition(repeated_gram(c.n, c.gram_chars, c.copies, 99), o),
                  "top_" + std::to_string(c.n) + "gram_char_frac") << c.n;
    }
}

TEST(RepetitionFilter, DupNgramCharFrac) {
    // Two copies of an n-gram of 500 t letters: 2 x 500 t = t x 1000 word letters.
    for (auto [n, t] : RepetitionOptions{}.dup_ngram) {
        auto o = none();
        o.dup_ngram = {{n, t}};
        size_t gram_chars = static_cast<size_t>(500 * t + 0.5);
        EXPECT_EQ(gopher_repetition(repeated_gram(n, gram_chars, 2, 1000), o), "") << n;
        EXPECT_EQ(gopher_repetition(repeated_gram(n, gram_chars, 2, 999), o), "dup_" + std::to_string(n) + "gram_char_frac") << n;
    }
}

TEST(RepetitionFilter, DefaultsKeepOrdinaryProse) {
    std::vector<std::string> w;
    for (int i = 0; i < 300; i++) w.push_back(unique_word(5));
    EXPECT_EQ(gopher_repetition(join(w), RepetitionOptions{}), "");
}

TEST(RepetitionFilter, ParsesThresholdLists) {
    auto v = sixnd::data::parse_ngram_thresholds("--x", "2:0.2,3:0.18");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[1].first, 3);
    EXPECT_DOUBLE_EQ(v[1].second, 0.18);
    EXPECT_THROW(sixnd::data::parse_ngram_thresholds("--x", "2:"), sixnd::Error);
    EXPECT_THROW(sixnd::data::parse_ngram_thresholds("--x", "0:0.1"), sixnd::Error);
    EXPECT_THROW(sixnd::data::parse_ngram_thresholds("--x", "2:1.5"), sixnd::Error);
}

// "2:0.2,2:0.1" kept both (which one applies?), and "2:0.2,,3:0.1" or a trailing comma passed as a
// shorter list; an empty list is how a rule is switched off and stays allowed.
TEST(RepetitionFilter, RefusesRepeatedNAndEmptyItems) {
    for (const char* bad : {"2:0.2,2:0.1", "2:0.2,,3:0.1", "2:0.2,", ",2:0.2"})
        EXPECT_THROW(sixnd::data::parse_ngram_thresholds("--x", bad), sixnd::Error) << bad;
    EXPECT_TRUE(sixnd::data::parse_ngram_thresholds("--x", "").empty());
}

// A field with something after its number was read as the number: "1e1" as n-gram 1, "2.9" as 2.
TEST(RepetitionFilter, ThresholdFieldsAreWholeNumbers) {
    for (const char* bad : {"1e1:0.2", "2.9:0.2", "2x:0.2", "2:0.2junk", "2:0.2:0.3"})
        EXPECT_THROW(sixnd::data::parse_ngram_thresholds("--x", bad), sixnd::Error) << bad;
    auto v = sixnd::data::parse_ngram_thresholds("--x", "10:1e-1");
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].first, 10);
    EXPECT_DOUBLE_EQ(v[0].second, 0.1);
}
