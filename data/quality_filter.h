// Gopher quality rules (Rae et al. 2021, appendix A): a document is kept only if it looks like
// prose. Defaults are the published thresholds; each is a flag.
#pragma once
#include <string_view>

namespace sixnd::data {

struct QualityOptions {
    double min_words = 50, max_words = 100000;
    double min_mean_word_length = 3, max_mean_word_length = 10;
    double max_symbol_word_ratio = 0.1;  // ("#" + "..." + "…") per word
    double max_bullet_lines = 0.9;       // share of lines starting with a bullet
    double max_ellipsis_lines = 0.3;     // share of lines ending in an ellipsis
    double min_alpha_words = 0.8;        // share of words holding a letter
    double min_stop_words = 2;           // of: the, be, to, of, and, that, have, with
};

// The name of the first rule the document breaks (e.g. "min_words"), or nullptr if it passes.
// Words are whitespace-separated tokens with punctuation and symbols stripped from their ends;
// a token that is nothing but punctuation is not a word.
const char* gopher_quality(std::string_view text, const QualityOptions& opts);

}  // namespace sixnd::data
