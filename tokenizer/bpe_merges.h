// Applying BPE merges to one pre-token: repeatedly merge the adjacent pair with the lowest rank
// (the leftmost of equal ranks), as GPT-2 and tiktoken do.
#pragma once
#include <cstdint>
#include <vector>

#include "tokenizer/flat_map.h"

namespace sixnd::bpe {

struct Merge {
    uint32_t rank;
    uint32_t id;  // the token the pair becomes
};

class MergeTable {
public:
    explicit MergeTable(size_t expected = 16) : map_(expected) {}
    // False when the pair is already present.
    bool add(uint32_t left, uint32_t right, Merge m) {
        bool inserted = false;
        Merge& slot = map_.get(pair_key(left, right), &inserted);
        if (inserted) slot = m;
        return inserted;
    }
    const Merge* find(uint32_t left, uint32_t right) const { return map_.find(pair_key(left, right)); }

private:
    FlatMap<Merge> map_;
};

// Merges ids (initially one per byte) in place.
void apply_merges(const MergeTable& merges, std::vector<uint32_t>& ids);

}  // namespace sixnd::bpe
