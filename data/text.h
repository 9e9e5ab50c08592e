// Text helpers shared by the stages: UTF-8 walking and the normalised word form that exact
// dedup, MinHash and decontamination compare, so "The cat," and "the  cat" count as equal.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sixnd::data {

// Lowercased runs of letters and digits, joined by single spaces; words[i] is (offset, length)
// into text. Because the words are joined by one space, any n consecutive words are one
// contiguous slice of text, which is what gets hashed.
struct NormWords {
    std::string text;
    std::vector<std::pair<uint32_t, uint32_t>> words;

    size_t size() const { return words.size(); }
    // The slice holding words [i, i + n).
    std::string_view span(size_t i, size_t n) const {
        size_t b = words[i].first, e = words[i + n - 1].first + words[i + n - 1].second;
        return std::string_view(text).substr(b, e - b);
    }
};

void normalize_words(std::string_view text, NormWords& out);

// Decodes one code point at s[i] (valid UTF-8 assumed, as after ingest) and advances i.
int32_t next_codepoint(std::string_view s, size_t& i);

// Unicode letter / punctuation-or-symbol tests (utf8proc categories).
bool is_letter(int32_t cp);
bool is_punct_or_symbol(int32_t cp);

uint64_t hash_bytes(std::string_view s, uint64_t seed = 0);

}  // namespace sixnd::data
