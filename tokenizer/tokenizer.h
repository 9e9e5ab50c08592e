// The tokenizer contract the rest of sixnd uses (data pipeline, trainer, sampler). The BPE
// machinery behind it lives in the other files of tokenizer/.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_spec.h"

namespace sixnd {

class Tokenizer {
public:
    // Loads a sixnd tokenizer file; throws Error naming the file and the fault.
    static Tokenizer load(const std::string& path);
    // Writes atomically (temporary name, then rename).
    void save(const std::string& path) const;

    size_t vocab_size() const;                                     // including special tokens
    std::optional<uint32_t> special_id(const std::string& token) const;  // e.g. "<|endoftext|>"

    // Special tokens in the text are recognised (longest match wins) and never merged.
    // Thread-safe: many threads may encode with one Tokenizer at once.
    std::vector<uint32_t> encode(std::string_view text) const;
    // Special-token strings are treated as ordinary text.
    std::vector<uint32_t> encode_ordinary(std::string_view text) const;
    // Exact bytes of the ids (may be invalid UTF-8); throws Error on an id >= vocab_size().
    std::string decode(const std::vector<uint32_t>& ids) const;

    // Hex content hash of the vocabulary, merges, specials and pattern: recorded in data
    // manifests and checkpoints so a vocabulary mismatch is caught.
    std::string hash() const;

    // Validates the spec (every byte has a token, every merge yields a token, specials are
    // distinct, valid UTF-8 and spelt like no ordinary token); throws Error(where, ...) naming
    // what is wrong.
    static Tokenizer from_spec(TokenizerSpec spec, const std::string& where);
    const TokenizerSpec& spec() const;
    // Like decode(), with each invalid UTF-8 sequence replaced by U+FFFD, so it shows.
    std::string decode_text(const std::vector<uint32_t>& ids) const;

private:
    struct Impl;
    explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;  // immutable, so copies share it and threads may too
};

}  // namespace sixnd
