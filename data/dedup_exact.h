// Exact deduplication: documents whose normalised text (see text.h) hashes equal are copies;
// the earliest is kept. Works on 64-bit hashes alone, so memory is 16 bytes per document.
#pragma once
#include <cstdint>
#include <vector>

#include "data/text.h"

namespace sixnd::data {

uint64_t exact_hash(const NormWords& words);

// For hashes in document order, true where an earlier entry has the same hash.
std::vector<bool> exact_duplicates(const std::vector<uint64_t>& hashes);

}  // namespace sixnd::data
