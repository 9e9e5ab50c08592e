// Sampling from next-token logits: temperature (0 = greedy), then top-k (0 = all), then top-p
// (nucleus: 1 = all), seeded.
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "model/decoder.h"

namespace sixnd {

struct SampleOptions {
    int max_tokens = 64;
    float temperature = 1.0f;
    int top_k = 0;
    // The most likely tokens whose probabilities (after temperature and top-k) first sum to at
    // least top_p; the token that crosses it is kept, so one token always is.
    float top_p = 1.0f;
    uint64_t seed = 1337;
    int stop_token = -1;  // e.g. <|endoftext|>; -1: none
    // Ids [0, vocab_limit) only (0: all): a model whose vocabulary is larger than its tokenizer's
    // has ids no text decodes to, which it learnt never to predict but could still draw.
    int vocab_limit = 0;
};

int sample_token(const std::vector<float>& logits, float temperature, int top_k, float top_p, Rng& rng);

// Feeds the prompt through the decoder, then generates until max_tokens, the stop token or a
// full cache. Returns the generated ids only.
std::vector<uint32_t> generate(Decoder& dec, const std::vector<uint32_t>& prompt, const SampleOptions& o);

}  // namespace sixnd
