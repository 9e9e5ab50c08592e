// Export to Hugging Face's tokenizer.json (a ByteLevel BPE model), so that `tokenizers`,
// `transformers` and the tools built on them can load sixnd's vocabularies.
#pragma once
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace sixnd {

// Throws Error when a special token's text is how tokenizer.json writes an ordinary token.
std::string hf_tokenizer_json(const Tokenizer& tok);
// Writes atomically.
void export_hf_tokenizer_json(const Tokenizer& tok, const std::string& path);
// Whether a file's first bytes are how hf_tokenizer_json()'s text begins, for writers that
// replace only a tokenizer.json sixnd wrote: a JSON object with a "version" (a package.json, a
// config) is not one.
bool hf_tokenizer_json_head(std::string_view head);

// tokenizer_config.json beside tokenizer.json: the fast tokenizer class and, where the
// vocabulary has <|endoftext|>, GPT-2's use of it as bos, eos and unk token. Without it no
// special token is named, so that transformers adds none the model has no row for.
std::string hf_tokenizer_config_json(const Tokenizer& tok, int model_max_length);

}  // namespace sixnd
