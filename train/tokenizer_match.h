// A tokenizer named beside a model or token shards is checked against them before any work.
// A model with fewer ids than the tokenizer has tokens trains happily and fails only later — a
// prompt id it has no embedding for, an export that refuses the checkpoint — and shards made by
// another tokenizer give bits per byte of the wrong bytes without any error at all.
#pragma once
#include <string>
#include <vector>

#include "data/token_set.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {

// Throws Error(tok_path, ...) naming both sizes when the tokenizer has more tokens than the model
// has ids. A model may have more ids than its tokenizer uses (one vocabulary size across the
// tokenizers compared in an ablation): the ids no token makes are never drawn by sample and are
// exported as they are, as Hugging Face models with padded vocabularies have them.
void require_model_vocab(const Tokenizer& tok, const std::string& tok_path, int model_vocab);

// Token shards and the name they were given by (--train-data, --val-data, --data).
struct NamedTokens {
    const TokenSet* tokens;
    std::string name;
};

// Throws Error(name, ...) when a set's manifest names another tokenizer, then (every manifest
// checked first) Error(shard, ...) when a shard holds an id the tokenizer does not have: shards
// without a manifest carry no tokenizer hash, and their ids are all there is to check.
void require_data_tokenizer(const std::vector<NamedTokens>& data, const Tokenizer& tok, const std::string& tok_path);

// Throws Error(tok_path, ...) when a checkpoint records the tokenizer it was trained with
// (trained_with: its hash, "" when none was given) and tok is another: its ids would read as
// other text, a prompt would be encoded into ids the model never learnt as such, and an export
// would ship a tokenizer the weights do not belong to.
void require_checkpoint_tokenizer(const Tokenizer& tok, const std::string& tok_path, const std::string& trained_with,
                                  const std::string& checkpoint);

}  // namespace sixnd
