#include "train/bits_per_byte.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace sixnd {

// Decoding is a concatenation of each id's bytes, so one length per id gives any sequence's.
TokenBytes::TokenBytes(const Tokenizer& tok) : len_(tok.vocab_size()) {
    for (size_t id = 0; id < len_.size(); id++) len_[id] = static_cast<uint32_t>(tok.decode({static_cast<uint32_t>(id)}).size());
}

uint64_t TokenBytes::count(const int32_t* ids, size_t n) const {
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= len_.size())
            throw Error("bits per byte", "token " + std::to_string(ids[i]) + " is outside the tokenizer's " +
                                             std::to_string(len_.size()) + " ids");
        bytes += len_[ids[i]];
    }
    return bytes;
}

double bits_per_byte(double mean_loss, double tokens, double bytes) {
    return bytes > 0 ? mean_loss * tokens / (bytes * std::log(2.0)) : 0.0;
}

}  // namespace sixnd
