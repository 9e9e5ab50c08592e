// Gopher repetition rules (Rae et al. 2021, table A1): documents that repeat lines, paragraphs
// or n-grams are mostly boilerplate or generated spam. Defaults are the published thresholds.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sixnd::data {

struct RepetitionOptions {
    double max_dup_line_frac = 0.3;       // lines that repeat an earlier line, by count
    double max_dup_para_frac = 0.3;       // paragraphs (split at blank lines), by count
    double max_dup_line_char_frac = 0.2;  // ... by characters
    double max_dup_para_char_frac = 0.2;
    // (n, max share of word characters in the most frequent n-gram)
    std::vector<std::pair<int, double>> top_ngram = {{2, 0.20}, {3, 0.18}, {4, 0.16}};
    // (n, max share of word characters covered by n-grams that occur more than once)
    std::vector<std::pair<int, double>> dup_ngram = {{5, 0.15}, {6, 0.14}, {7, 0.13}, {8, 0.12}, {9, 0.11}, {10, 0.10}};
};

// Parses "2:0.2,3:0.18"; throws Error naming the flag.
std::vector<std::pair<int, double>> parse_ngram_thresholds(const std::string& flag, const std::string& spec);

// The name of the first rule broken (e.g. "dup_line_frac", "top_3gram_char_frac",
// "dup_7gram_char_frac"), or empty. Characters are counted as UTF-8 bytes.
std::string gopher_repetition(std::string_view text, const RepetitionOptions& opts);

}  // namespace sixnd::data
