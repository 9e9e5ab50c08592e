// Everything that defines a byte-level BPE tokenizer, as plain data: what the trainer and the
// importers produce, and what the tokenizer file stores.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sixnd {

struct TokenizerSpec {
    std::string pattern;              // the pre-tokenizer regex (see pretokenizer.h)
    std::vector<std::string> tokens;  // the bytes of every id; a special token's are its text
    // In rank order: merge r joins (left, right) into the token whose bytes are theirs joined.
    std::vector<std::pair<uint32_t, uint32_t>> merges;
    std::vector<std::pair<std::string, uint32_t>> specials;  // (text, id)
};

}  // namespace sixnd
