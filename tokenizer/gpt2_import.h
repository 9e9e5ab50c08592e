// Importing GPT-2's own files (vocab.json and merges.txt, as OpenAI and Hugging Face publish
// them), so that sixnd encodes exactly as GPT-2 does.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace sixnd {

// merges.txt may start with a "#version" line. `specials` name vocab.json entries to treat as
// special tokens; a name that vocab.json lacks is appended as a new id. Errors name the file
// and line ("merges.txt:17: ..."); a vocab.json token that no merge makes (merges.txt cut short,
// or from another vocabulary) is an error naming merges.txt.
Tokenizer import_gpt2(const std::string& vocab_path, const std::string& merges_path,
                      const std::vector<std::string>& specials, const std::string& pattern);

}  // namespace sixnd
