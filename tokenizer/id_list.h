// Token ids written as text: a JSON array, as `sixnd tokenizer encode --out -` writes it, or
// ids separated by commas or whitespace, as a person types them. Parsed strictly, because a
// list cut short by a failed copy or a full disk still looks like ids: a lenient reader would
// decode it to a shorter text and say nothing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sixnd {

// Throws Error("WHERE:LINE:COLUMN", ...) at the first fault: a cut-off or malformed array, text
// after it, a negative, fractional or overlong number, an id >= vocab_size, or no ids at all
// (an empty list is written "[]").
std::vector<uint32_t> parse_id_list(std::string_view text, const std::string& where, size_t vocab_size);

}  // namespace sixnd
