// Export to Hugging Face's tokenizer.json (a ByteLevel BPE model), so that `tokenizers`,
// `transformers` and the tools built on them can load sixnd's vocabularies.
#pragma once
#include <string>

#include "tokenizer/tokenizer.h"

namespace sixnd {

std::string hf_tokenizer_json(const Tokenizer& tok);
// Writes atomically.
void export_hf_tokenizer_json(const Tokenizer& tok, const std::string& path);

}  // namespace sixnd
