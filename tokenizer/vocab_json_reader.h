// A reader for GPT-2's vocab.json, a flat JSON object of token -> id, that remembers the line
// of every entry: a general JSON parser reports syntax errors by byte offset and cannot say on
// which line a bad token or a duplicate id stands.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sixnd {

struct VocabEntry {
    std::string token;  // as written (GPT-2's printable byte encoding), JSON escapes resolved
    uint64_t id;
    size_t line;
};

// Throws Error("PATH:LINE", ...) on a syntax error.
std::vector<VocabEntry> read_vocab_json(const std::string& path);

}  // namespace sixnd
