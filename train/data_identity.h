// The identity of the data a run trains on, as a checkpoint records it (meta.json's "data"):
// each shard's token count and tokens hash (the data manifest's tokens_xxh3_64, one more pass
// over the tokens, like the vocabulary check's), so that a shard reached by another spelling of
// its path, or moved, is the same data and one rewritten in place is not. Paths are recorded
// absolute, for people and `sixnd replay`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "data/token_set.h"

namespace sixnd {

nlohmann::json data_json(const TokenSet& ts);

// How the data a checkpoint trained on (`then`) differs from `now`, naming the first shard that
// differs; "" when it is the same.
// Checkpoints from before shards carried a content hash are matched by file name and token
// count, shard by shard.
std::string data_change(const nlohmann::json& then, const nlohmann::json& now);

// The first shard of `val` that is also one of `train`'s files (the same file, whatever the
// spelling of its path: `--train-data 'data/*.bin'` takes in data prepare's val shard too) or a
// copy of one (the same tokens, not none), or "".
std::string shard_in_both(const TokenSet& train, const TokenSet& val);

}  // namespace sixnd
