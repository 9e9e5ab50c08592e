// Streaming large inputs in pieces that pre-tokenize exactly as the whole would: each chunk ends
// at a "safe cut", a place no pre-token and no special token can span, so chunks can be counted
// or encoded independently (and in parallel) with the same result as one pass over the file.
//
// A safe cut is just before a space that follows a printable ASCII character and precedes an
// ASCII letter ("a| b"), or just after a newline between two characters that are neither
// whitespace nor invalid UTF-8 ("a\n|b", "я\n|中"). For the gpt2 and gpt4 patterns no pre-token
// crosses either place: one holding the newline is whitespace up to it, or (gpt4) punctuation
// and newlines, and ends there; and only a whitespace run before it could have ended
// differently when the text stopped at the newline. No place is safe
// for every regex (lookarounds see arbitrarily far, `(?s).+` spans everything), so under a custom
// pattern each input is one chunk: exact, at the price of memory as large as the largest input
// and no parallelism inside one input.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/special_tokens.h"

namespace sixnd {

// The last safe cut in text at or after `from` (a position in (max(from, 0), size)), or 0 when
// there is none. Special tokens are matched as encode() matches them from the start of text
// (which must be the start of an input or a safe cut), so one that starts before `from` still
// rules out cuts inside it. more_follows: text is a prefix of the input, so the last
// max_len() - 1 places are not considered (a special token there may end past the text).
size_t last_safe_cut(std::string_view text, const SpecialTokens& specials, size_t from = 0, bool more_follows = false);

// Where to split the file at `path` into a training part and a held-out tail, near byte `at`
// (0 < at < its size): the last safe cut in the MiB before `at`, so that the two parts
// pre-tokenize as the whole does. Where that stretch has none (text without ASCII spaces or
// newlines), the last place at or before `at` that is inside no special token and no UTF-8
// character. Special tokens are matched as encode() matches them in the whole file. Throws
// Error naming the file when it cannot be read.
uint64_t split_place(const std::string& path, uint64_t at, const SpecialTokens& specials);

// A file, or a byte range of one; "-" is standard input. Each range ends a chunk: pre-tokens
// never span two inputs.
struct InputRange {
    std::string path;
    uint64_t begin = 0;
    uint64_t end = UINT64_MAX;  // past the end: to the end of the file
};

// How a message names an input: standard input as "stdin", not "-".
inline std::string input_name(const std::string& path) { return path == "-" ? "stdin" : path; }

class ChunkReader {
public:
    // chunk_bytes is the target size; a chunk grows beyond it only when text lacks safe cuts.
    // pattern: the pre-tokenizer regex the chunks are for (custom ones are never cut).
    ChunkReader(std::vector<InputRange> inputs, size_t chunk_bytes, const SpecialTokens* specials,
                const std::string& pattern);
    ~ChunkReader();
    ChunkReader(const ChunkReader&) = delete;
    ChunkReader& operator=(const ChunkReader&) = delete;

    // Replaces chunk with the next one; false at the end. Throws Error naming an unreadable input.
    bool next(std::string& chunk);
    // The input the last chunk next() returned came from, so errors about it can name the file.
    const std::string& chunk_path() const { return chunk_path_; }
    uint64_t bytes_read() const { return bytes_read_; }
    // The largest buffer held so far (the reader's share of memory).
    size_t peak_buffer() const { return peak_buffer_; }

private:
    void open_next();
    // Appends up to n bytes of the current input; false when it has ended.
    bool read_more(std::string& buf, size_t n);

    std::vector<InputRange> inputs_;
    size_t chunk_bytes_;
    bool cut_inside_;  // the pattern is one the safe cuts hold for
    SpecialTokens no_specials_;
    const SpecialTokens* specials_;
    size_t index_ = 0;  // next input to open
    FILE* file_ = nullptr;
    uint64_t left_ = 0;  // bytes left in the current range
    std::string carry_;
    std::string chunk_path_;
    uint64_t bytes_read_ = 0;
    size_t peak_buffer_ = 0;
};

}  // namespace sixnd
