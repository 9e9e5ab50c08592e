// Bits per byte: a loss in nats per token turned into bits per byte of the text the tokens
// decode to, so that models with different tokenizers compare:
//   bpb = mean_loss * tokens / (bytes * ln 2)
// `bytes` counts the exact bytes Tokenizer::decode writes for the scored (target) tokens; a
// special token counts as the bytes of its text.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace sixnd {

class TokenBytes {
public:
    explicit TokenBytes(const Tokenizer& tok);
    // Bytes of decode(ids[0..n)); throws Error for an id the tokenizer does not have.
    uint64_t count(const int32_t* ids, size_t n) const;

private:
    std::vector<uint32_t> len_;  // bytes of each id's decoding
};

double bits_per_byte(double mean_loss, double tokens, double bytes);

}  // namespace sixnd
