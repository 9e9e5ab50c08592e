// The sixnd tokenizer file: one JSON document that says what it is, so it can be read (and
// checked) without sixnd. Version 1:
//
//   {
//     "format": "sixnd-tokenizer",          always this string
//     "version": 1,                         readers refuse versions they do not know
//     "model": "byte-level-bpe",
//     "byte_encoding": "gpt2-bytes-to-unicode",
//     "pattern_name": "gpt2",               "gpt2", "gpt4" or "custom" (informative only)
//     "pattern": "'s|'t|...",               the pre-tokenizer regex (PCRE2, UTF + UCP), never a name
//     "vocab_size": 50257,                  the length of "tokens"
//     "hash": "9f0c...",                    Tokenizer::hash(), checked on load
//     "specials": [{"id": 50256, "token": "<|endoftext|>"}],
//     "tokens": ["!", "\"", ..., "<|endoftext|>"],
//     "merges": [[220, 83], ...]
//   }
//
// "tokens" holds every id's bytes in id order, written through GPT-2's byte-to-unicode table
// (byte_encoding) so that every entry is printable UTF-8; a special token's entry is its text
// through the same table. "merges" holds (left id, right id) pairs in rank order; each joins
// into the token whose bytes are the two joined, which must be in "tokens". One token and one
// merge per line, so the file diffs well.
#pragma once
#include <string>

#include "tokenizer/tokenizer_spec.h"

namespace sixnd {

constexpr int kTokenizerFileVersion = 1;

// Throws Error(path, ...) naming the field at fault. stored_hash receives the "hash" field
// ("" when absent).
TokenizerSpec read_tokenizer_file(const std::string& path, std::string* stored_hash = nullptr);
std::string tokenizer_file_text(const TokenizerSpec& spec, const std::string& hash);

}  // namespace sixnd
