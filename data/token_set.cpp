#include "data/token_set.h"

#include <algorithm>

#include "core/error.h"

namespace sixnd {

TokenSet::TokenSet(const std::string& glob) : pattern_(glob) {
    for (const auto& p : expand_glob(glob)) {
        shards_.emplace_back(p);
        starts_.push_back(total_);
        total_ += shards_.back().size();
    }
}

void TokenSet::read(size_t begin, size_t count, int32_t* out) const {
    if (begin + count > total_)
        throw Error(pattern_, "read of tokens [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                                  ") past the end of the " + std::to_string(total_) + " tokens");
    size_t s = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
    size_t i = 0;
    while (i < count) {
        const Shard& sh = shards_[s];
        size_t local = begin + i - starts_[s];
        size_t take = std::min(count - i, sh.size() - local);
        for (size_t k = 0; k < take; k++) out[i + k] = static_cast<int32_t>(sh[local + k]);
        i += take;
        s++;
    }
}

void TokenSet::check_vocab(int vocab_size) const {
    for (const auto& sh : shards_) {
        if (sh.max_token() < static_cast<uint32_t>(vocab_size)) continue;
        for (size_t i = 0; i < sh.size(); i++)
            if (sh[i] >= static_cast<uint32_t>(vocab_size))
                throw Error(sh.path(), "token " + std::to_string(sh[i]) + " at position " + std::to_string(i) +
                                           " is outside the model's vocabulary of " + std::to_string(vocab_size));
    }
}

}  // namespace sixnd
