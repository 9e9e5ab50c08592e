// A set of llm.c shards seen as one concatenated token sequence, in sorted path order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/shard.h"

namespace sixnd {

class TokenSet {
public:
    explicit TokenSet(const std::string& glob);

    size_t size() const { return total_; }
    const std::vector<Shard>& shards() const { return shards_; }
    const std::string& pattern() const { return pattern_; }
    // out[i] = token (begin + i) of the concatenation; reads across shard boundaries.
    void read(size_t begin, size_t count, int32_t* out) const;
    // Throws Error naming the shard and position of the first token >= vocab_size.
    void check_vocab(int vocab_size) const;

private:
    std::string pattern_;
    std::vector<Shard> shards_;
    std::vector<size_t> starts_;  // starts_[i] = global index of shard i's first token
    size_t total_ = 0;
};

}  // namespace sixnd
