#include "train/tokenizer_match.h"

#include "core/error.h"

namespace sixnd {

void require_model_vocab(const Tokenizer& tok, const std::string& tok_path, int model_vocab) {
    const size_t n = tok.vocab_size(), m = static_cast<size_t>(model_vocab);
    if (n > m)
        throw Error(tok_path, "has " + std::to_string(n) + " tokens, more than the model's vocabulary of " +
                                  std::to_string(m) + " (ids " + std::to_string(m) + " and up have no embedding)");
}

void require_data_tokenizer(const std::vector<NamedTokens>& data, const Tokenizer& tok, const std::string& tok_path) {
    for (const auto& [tokens, name] : data) {
        const std::string& made_with = tokens->tokenizer_hash();
        if (!made_with.empty() && made_with != tok.hash())
            throw Error(name, "was made with tokenizer " + made_with + ", but the tokenizer " + tok_path + " is " +
                                  tok.hash() + ": a vocabulary mismatch");
    }
    // Shards without a manifest carry no hash: an id the tokenizer does not have shows they were
    // made with another one, before a batch runs (bits per byte would stop at its first evaluation).
    // After every manifest's check, which names the cause where there is one.
    for (const auto& [tokens, name] : data)
        tokens->require_below(static_cast<uint32_t>(tok.vocab_size()),
                              "is not one of the " + std::to_string(tok.vocab_size()) + " tokens of " + tok_path +
                                  ": the shards were made with another tokenizer");
}

void require_checkpoint_tokenizer(const Tokenizer& tok, const std::string& tok_path, const std::string& trained_with,
                                  const std::string& checkpoint) {
    if (!trained_with.empty() && trained_with != tok.hash())
        throw Error(tok_path, "is tokenizer " + tok.hash() + ", but " + checkpoint + " was trained with tokenizer " +
                                  trained_with + "; leave out --tokenizer to use the checkpoint's own copy");
}

}  // namespace sixnd
