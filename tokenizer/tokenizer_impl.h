// The tokenizer's immutable state (private to tokenizer/): built once from a spec, then shared
// by every copy of the Tokenizer and every thread encoding with it.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {

struct Tokenizer::Impl {
    Impl(TokenizerSpec spec, const std::string& where);

    // Appends the ids of text, with special-token strings treated as ordinary text.
    void encode_ordinary(std::string_view text, std::vector<uint32_t>& out) const;

    TokenizerSpec spec;
    Pretokenizer pretokenizer;
    SpecialTokens specials;
    bpe::MergeTable merges;
    std::array<uint32_t, 256> byte_ids{};
    std::string hash;
    uint64_t serial;  // unique per Impl: keys the per-thread pre-token caches
};

}  // namespace sixnd
