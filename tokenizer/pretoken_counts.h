// How often each distinct pre-token occurs: what BPE training needs from the corpus. Text is
// counted once, in parallel and streaming, and the merge loop never looks at it again.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chunk_reader.h"

namespace sixnd {

// A hash table of byte strings to counts; keys live in one arena, so a table of millions of
// short pieces costs little more than their bytes.
class PretokenCounts {
public:
    PretokenCounts();
    void add(std::string_view piece, uint64_t n = 1);
    void add_all(const PretokenCounts& other);
    size_t size() const { return used_; }
    uint64_t total() const { return total_; }
    void for_each(const std::function<void(std::string_view, uint64_t)>& f) const;

private:
    struct Slot {
        uint64_t hash = 0;
        uint64_t off = 0;
        uint64_t count = 0;  // 0: empty
        uint32_t len = 0;
    };
    void grow();

    std::vector<Slot> slots_;
    std::string arena_;
    size_t used_ = 0;
    uint64_t total_ = 0;
};

struct CountOptions {
    std::string pattern;                // the pre-tokenizer regex
    std::vector<std::string> specials;  // cut out of the text and not counted
    int threads = 0;                    // 0: all cores
    size_t chunk_bytes = size_t(4) << 20;
    bool progress = false;              // log MB read and rate
};

// Streams the inputs through `threads` workers, each counting into its own table; memory is
// bounded by the tables and about 2 * threads chunks. Pieces of one byte are not counted (they
// hold no pair to merge). bytes_read, when given, receives the bytes the inputs held, so that
// a caller finding nothing counted can tell empty inputs from text of single characters.
PretokenCounts count_pretokens(const std::vector<InputRange>& inputs, const CountOptions& opt,
                               uint64_t* bytes_read = nullptr);

}  // namespace sixnd
