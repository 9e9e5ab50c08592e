// Each Gopher quality rule on documents built to sit exactly on its threshold (kept) and one
// step past it (removed).
#include "data/quality_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using sixnd::data::gopher_quality;
using sixnd::data::QualityOptions;

namespace {

// n ordinary words: "the" and "and" once each, the rest four-letter words that are not stop words.
std::vector<std::string> base_words(size_t n) {
    std::vector<std::string> w = {"the", "and"};
    static const char* const kFill[] = {"cats", "walk", "over", "green", "hills", "under", "blue", "skies"};
    for (size_t i = 2; i < n; i++) w.push_back(kFill[i % 8]);
    return w;
}

std::string join(const std::vector<std::string>& w, const char* sep = " ") {
    std::string s;
    for (size_t i = 0; i < w.size(); i++) s += (i ? sep : "") + w[i];
    return s;
}

// Ten lines of `words_per_line` words each.
std::vector<std::string> lines_of(size_t words_per_line) {
    auto w = base_words(10 * words_per_line);
    std::vector<std::string> lines;
    for (size_t l = 0; l < 10; l++)
        lines.push_back(join(std::vector<std::string>(w.begin() + l * words_per_line, w.begin() + (l + 1) * words_per_line)));
    return lines;
}

std::string rule(const std::string& doc) {
    const char* r = gopher_quality(doc, QualityOptions{});
    return r ? r : "pass";
}

}  // namespace

TEST(QualityFilter, BaseDocumentPasses) { EXPECT_EQ(rule(join(base_words(80))), "pass"); }

TEST(QualityFilter, MinWords) {
    EXPECT_EQ(rule(join(base_words(50))), "pass");
    EXPECT_EQ(rule(join(base_words(49))), "min_words");
    // Punctuation-only tokens are not words.
    EXPECT_EQ(rule(join(base_words(49)) + " -- !!"), "min_words");
}

TEST(QualityFilter, MaxWords) {
    EXPECT_EQ(rule(join(base_words(100000))), "pass");
    EXPECT_EQ(rule(join(base_words(100001))), "max_words");
}

TEST(QualityFilter, MinMeanWordLength) {
    std::vector<std::string> w(48, "cat");
    w.push_back("the");
    w.push_back("and");
    EXPECT_EQ(rule(join(w)), "pass");  // mean exactly 3
    w[0] = "ox";
    EXPECT_EQ(rule(join(w)), "min_mean_word_length");
}

TEST(QualityFilter, MaxMeanWordLength) {
    // 2 stop words (3 letters) + 46 of 10 + 2 of 17 letters: 500 letters over 50 words.
    std::vector<std::string> w = {"the", "and"};
    for (int i = 0; i < 46; i++) w.push_back("abcdefghij");
    w.push_back("abcdefghijklmnopq");
    w.push_back("abcdefghijklmnopq");
    EXPECT_EQ(rule(join(w)), "pass");
    w[2] = "abcdefghijk";
    EXPECT_EQ(rule(join(w)), "max_mean_word_length");
}

TEST(QualityFilter, WordsAreStrippedOfPunctuation) {
    std::vector<std::string> w(48, "cat,");
    w.push_back("(the)");
    w.push_back("and.");
    EXPECT_EQ(rule(join(w)), "pass");  // "cat," counts as a 3-letter word
}

TEST(QualityFilter, MaxSymbolWordRatio) {
    auto w = base_words(50);
    EXPECT_EQ(rule(join(w) + " # # # # #"), "pass");  // 5 per 50 words = 0.1
    EXPECT_EQ(rule(join(w) + " # # # # # #"), "max_symbol_word_ratio");
    // Ellipses lead the line, so that it does not end in one.
    EXPECT_EQ(rule("# # # ... \u2026 " + join(w)), "pass");
    EXPECT_EQ(rule("# # # ... \u2026 ... " + join(w)), "max_symbol_word_ratio");
}

TEST(QualityFilter, MaxBulletLines) {
    auto lines = lines_of(6);
    for (int i = 0; i < 9; i++) lines[i] = "- " + lines[i];
    EXPECT_EQ(rule(join(lines, "\n")), "pass");  // 9 of 10
    lines[9] = "\u2022 " + lines[9];
    EXPECT_EQ(rule(join(lines, "\n")), "max_bullet_lines");
}

TEST(QualityFilter, MaxEllipsisLines) {
    auto lines = lines_of(6);
    for (int i = 0; i < 3; i++) lines[i] += "...";
    EXPECT_EQ(rule(join(lines, "\n")), "pass");  // 3 of 10
    lines[3] += "\u2026";
    EXPECT_EQ(rule(join(lines, "\n")), "max_ellipsis_lines");
}

TEST(QualityFilter, MinAlphaWords) {
    auto w = base_words(50);
    for (int i = 0; i < 10; i++) w[10 + i] = "1234";
    EXPECT_EQ(rule(join(w)), "pass");  // 40 of 50 hold a letter
    w[30] = "5678";
    EXPECT_EQ(rule(join(w)), "min_alpha_words");
}

TEST(QualityFilter, MinStopWords) {
    auto w = base_words(50);
    EXPECT_EQ(rule(join(w)), "pass");
    w[1] = "cows";
    EXPECT_EQ(rule(join(w)), "min_stop_words");
    w[2] = "The";  // case does not matter
    EXPECT_EQ(rule(join(w)), "pass");
}

TEST(QualityFilter, ThresholdsAreOptions) {
    QualityOptions o;
    o.min_words = 5;
    EXPECT_EQ(gopher_quality("the cat and the dog", o), nullptr);
    EXPECT_STREQ(gopher_quality("cat and dog", o), "min_words");
    o.min_words = 0;
    EXPECT_STREQ(gopher_quality("", o), "no_words");
    EXPECT_STREQ(gopher_quality("#### ==== ~~", o), "no_words");
}
