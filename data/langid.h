// Language identification with CLD2. A document is kept when its most likely language is one
// of --langs and CLD2 attributes at least --min-lang-confidence of its text to that language.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sixnd::data {

struct LangGuess {
    int lang;           // CLD2 Language value
    double confidence;  // share of the text CLD2 attributes to it (unknown: to no language), 0..1
};

LangGuess detect_language(std::string_view text);
// ISO 639-1 style code, e.g. "en"; "un" for unknown.
std::string language_code(int lang);
// Parses "en,de"; throws Error naming --langs on a code CLD2 does not know.
std::vector<int> parse_languages(const std::string& list);

}  // namespace sixnd::data
