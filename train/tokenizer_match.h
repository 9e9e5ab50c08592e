// A tokenizer named beside a model or token shards is checked against them before any work.
// A model with fewer ids than the tokenizer has tokens trains happily and fails only later — a
// prompt id it has no embedding for, an export that refuses the checkpoint — and shards made by
// another tokenizer give bits per byte of the wrong bytes without any error at all.
#pragma once
#include <string>

#include "data/token_set.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {

// at_most: every token id is one the model has (training, sampling, evaluation: a model may be
// given more ids than its tokenizer uses, e.g. one vocabulary size across tokenizers compared).
// exact: one id per token (an exported model and its tokenizer describe one vocabulary).
enum class VocabFit { at_most, exact };

// Throws Error(tok_path, ...) naming both sizes when the tokenizer does not fit the model.
void require_model_vocab(const Tokenizer& tok, const std::string& tok_path, int model_vocab, VocabFit fit);

// Throws Error(data_name, ...) when the shards' manifest names another tokenizer (shards without
// a manifest carry no tokenizer hash and pass).
void require_data_tokenizer(const TokenSet& data, const std::string& data_name, const Tokenizer& tok,
                            const std::string& tok_path);

}  // namespace sixnd
