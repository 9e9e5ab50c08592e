// UTF-8 repair for showing decoded tokens as text, and the check for text that must be UTF-8.
#pragma once
#include <string>
#include <string_view>

namespace sixnd {

// Copies valid UTF-8 through and replaces each maximal invalid subsequence with U+FFFD, the
// same substitution Python's errors="replace" makes (so GPT-2 decodes look the same).
std::string replace_invalid_utf8(std::string_view bytes);

// Whether bytes are valid UTF-8 (RFC 3629), as JSON text must be.
bool valid_utf8(std::string_view bytes);

// The code point of the valid n-byte sequence at s[i] (n: utf8_sequence_length(s, i), or 1 for
// ASCII).
char32_t utf8_code_point(std::string_view s, size_t i, size_t n);

}  // namespace sixnd
