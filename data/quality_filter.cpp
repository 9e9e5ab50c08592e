#include "data/quality_filter.h"

#include <cstring>

#include "data/text.h"

namespace sixnd::data {

static bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static bool is_stop_word(std::string_view w) {
    static const char* const kStop[] = {"the", "be", "to", "of", "and", "that", "have", "with"};
    if (w.size() < 2 || w.size() > 4) return false;
    char low[4];
    for (size_t i = 0; i < w.size(); i++) low[i] = static_cast<char>(w[i] >= 'A' && w[i] <= 'Z' ? w[i] + 32 : w[i]);
    std::string_view lw(low, w.size());
    for (const char* s : kStop)
        if (lw == s) return true;
    return false;
}

static bool starts_with_bullet(std::string_view line) {
    static const char* const kBullets[] = {"\u2022", "\u2023", "\u25E6", "\u25CF", "\u25AA", "\u2043", "-", "*"};
    for (const char* b : kBullets)
        if (line.substr(0, std::strlen(b)) == b) return true;
    return false;
}

static bool ends_with_ellipsis(std::string_view line) {
    auto ends = [&](std::string_view s) { return line.size() >= s.size() && line.substr(line.size() - s.size()) == s; };
    return ends("...") || ends("\u2026");
}

static size_t count_of(std::string_view text, std::string_view needle) {
    size_t n = 0;
    for (size_t p = text.find(needle); p != std::string_view::npos; p = text.find(needle, p + needle.size())) n++;
    return n;
}

const char* gopher_quality(std::string_view text, const QualityOptions& o) {
    size_t words = 0, word_chars = 0, alpha_words = 0, stop_words = 0;
    size_t i = 0, n = text.size();
    while (i < n) {
        while (i < n && is_space(static_cast<unsigned char>(text[i]))) i++;
        if (i == n) break;
        size_t b = i;
        while (i < n && !is_space(static_cast<unsigned char>(text[i]))) i++;
        std::string_view tok = text.substr(b, i - b);
        // Strip punctuation and symbols from both ends, counting code points of what remains.
        size_t j = 0, first = std::string_view::npos, last = 0, chars = 0;
        bool letter = false;
        while (j < tok.size()) {
            size_t at = j;
            int32_t cp = next_codepoint(tok, j);
            if (is_punct_or_symbol(cp)) continue;
            if (first == std::string_view::npos) first = at;
            last = j;
            letter = letter || is_letter(cp);
        }
        if (first == std::string_view::npos) continue;
        std::string_view word = tok.substr(first, last - first);
        for (size_t k = 0; k < word.size();) {
            next_codepoint(word, k);
            chars++;
        }
        words++;
        word_chars += chars;
        alpha_words += letter;
        stop_words += is_stop_word(word);
    }
    // Without a word there is no mean word length or ratio to judge: removed for that, under its
    // own name, also where --min-words 0 asks to keep short documents.
    if (words == 0) return "no_words";
    if (words < o.min_words) return "min_words";
    if (words > o.max_words) return "max_words";
    double mean = static_cast<double>(word_chars) / static_cast<double>(words);
    if (mean < o.min_mean_word_length) return "min_mean_word_length";
    if (mean > o.max_mean_word_length) return "max_mean_word_length";
    double symbols = static_cast<double>(count_of(text, "#") + count_of(text, "...") + count_of(text, "\u2026"));
    if (symbols / static_cast<double>(words) > o.max_symbol_word_ratio) return "max_symbol_word_ratio";

    size_t lines = 0, bullets = 0, ellipses = 0;
    for (size_t b = 0; b <= n;) {
        size_t e = text.find('\n', b);
        if (e == std::string_view::npos) e = n;
        std::string_view line = text.substr(b, e - b);
        size_t s = 0, t = line.size();
        while (s < t && is_space(static_cast<unsigned char>(line[s]))) s++;
        while (t > s && is_space(static_cast<unsigned char>(line[t - 1]))) t--;
        line = line.substr(s, t - s);
        if (!line.empty()) {
            lines++;
            bullets += starts_with_bullet(line);
            ellipses += ends_with_ellipsis(line);
        }
        b = e + 1;
    }
    if (lines > 0 && static_cast<double>(bullets) / static_cast<double>(lines) > o.max_bullet_lines) return "max_bullet_lines";
    if (lines > 0 && static_cast<double>(ellipses) / static_cast<double>(lines) > o.max_ellipsis_lines)
        return "max_ellipsis_lines";
    if (static_cast<double>(alpha_words) / static_cast<double>(words) < o.min_alpha_words) return "min_alpha_words";
    if (static_cast<double>(stop_words) < o.min_stop_words) return "min_stop_words";
    return nullptr;
}

}  // namespace sixnd::data
