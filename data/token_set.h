// A set of llm.c shards seen as one concatenated token sequence. It is named either by a glob
// (shards in sorted path order) or by the manifest.json that `sixnd data prepare` wrote —
// `DIR/manifest.json` for its training shards, `DIR/manifest.json:val` for the validation
// split — in which case the shards' paths must lie inside the manifest's directory, their token
// counts and content hashes are checked against the manifest, and the tokenizer hash it records
// is kept, so a vocabulary mismatch can be caught.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "data/shard.h"

namespace sixnd {

class TokenSet {
public:
    // announce: say (log_info) before the set's first full pass when its shards are large, so a
    // long silent start is not taken for a hang (rank 0's loader announces, the others do not).
    explicit TokenSet(const std::string& spec, bool announce = false);

    size_t size() const { return total_; }
    const std::vector<Shard>& shards() const { return shards_; }
    // Where shard i's first token is in the concatenation.
    size_t start(size_t i) const { return starts_[i]; }
    const std::string& pattern() const { return pattern_; }
    // out[i] = token (begin + i) of the concatenation; reads across shard boundaries. After
    // check_vocab, a token outside that vocabulary is an Error too: a shard rewritten in place
    // while a run reads it would otherwise index past the embeddings.
    void read(size_t begin, size_t count, int32_t* out) const;
    // Throws Error naming the shard and position of the first token >= vocab_size.
    void check_vocab(int vocab_size) const;
    // Throws Error(shard, "token X at position P " + outside) for the first token >= limit.
    void require_below(uint32_t limit, const std::string& outside) const;
    // The tokenizer hash the manifest records ("" for a glob).
    const std::string& tokenizer_hash() const { return tokenizer_hash_; }

private:
    void add(const std::string& path);
    void announce_passes() const;

    std::string pattern_;
    std::string tokenizer_hash_;
    std::vector<Shard> shards_;
    std::vector<size_t> starts_;  // starts_[i] = global index of shard i's first token
    size_t total_ = 0;
    mutable uint32_t checked_vocab_ = 0;  // what check_vocab found every token below (0: not checked)
};

}  // namespace sixnd
