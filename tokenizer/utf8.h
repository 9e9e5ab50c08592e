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

}  // namespace sixnd
