// Exact deduplication: documents whose normalised text (see text.h) hashes equal are copies;
// the earliest is kept. Works on 64-bit hashes alone, so memory is 16 bytes per document.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "data/text.h"

namespace sixnd::data {

// words: the normalised form of text. A document without a word (ASCII art, a row of symbols)
// normalises to nothing, so its own bytes tell it apart from every other such document.
uint64_t exact_hash(const NormWords& words, std::string_view text);

// For hashes in document order, true where an earlier entry has the same hash.
std::vector<bool> exact_duplicates(const std::vector<uint64_t>& hashes);

}  // namespace sixnd::data
