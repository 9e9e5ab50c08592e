// Byte-level BPE training. Ids: the 256 bytes in byte order, then one per merge in the order
// learned, then the special tokens (so GPT-2's layout, with <|endoftext|> last).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/chunk_reader.h"
#include "tokenizer/pretoken_counts.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {

struct BpeTrainOptions {
    size_t vocab_size = 0;              // including the 256 bytes and the specials
    std::vector<std::string> specials;  // never merged; cut out of the training text
    std::string pattern;                // the pre-tokenizer regex (resolve_pattern("gpt2"), ...)
    int threads = 0;                    // for counting; 0: all cores
    size_t chunk_bytes = size_t(4) << 20;
    // Longest token a merge may make, in bytes; 0: no limit (GPT-2's and tiktoken's training).
    // Long runs of one character (whitespace, '=' rules) otherwise merge into tokens as long
    // as the run, which waste vocabulary on text seen once.
    size_t max_token_bytes = 0;
    bool progress = false;              // log counting and merge progress
};

// Throws Error when vocab_size is below 256 + specials, or when the inputs hold no pair to merge
// at all (naming them). Stops early (with a warning) when the text runs out of pairs to merge.
Tokenizer train_bpe(const std::vector<InputRange>& inputs, const BpeTrainOptions& opt);
Tokenizer train_bpe_from_counts(const PretokenCounts& counts, const BpeTrainOptions& opt);

}  // namespace sixnd
