// GPT-2's reversible byte <-> printable-character table. GPT-2's vocab.json and merges.txt, the
// sixnd tokenizer file and Hugging Face's tokenizer.json all write token bytes through it, so
// that every token (even a lone continuation byte) is a printable UTF-8 string.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace sixnd {

// Each byte becomes the UTF-8 of its printable character.
std::string bytes_to_printable(std::string_view bytes);
// The inverse; nullopt when a character is not in the table (or the UTF-8 is invalid).
std::optional<std::string> printable_to_bytes(std::string_view text);

}  // namespace sixnd
