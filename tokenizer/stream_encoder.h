// Encoding inputs larger than memory: chunks cut at safe places (chunk_reader.h) are encoded
// in parallel and handed on in order, so the ids equal those of one encode() of the whole text
// while memory stays at a few chunks per thread.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "tokenizer/chunk_reader.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {

struct EncodeStats {
    uint64_t bytes = 0;
    uint64_t tokens = 0;
    size_t peak_buffer_bytes = 0;  // the most text held at once (reader + chunks in flight)
    double seconds = 0;
};

// `progress`, when given, is called after each batch of chunks with the counts so far (bytes read,
// tokens handed to the sink, seconds).
EncodeStats encode_stream(const Tokenizer& tok, const std::vector<InputRange>& inputs, int threads,
                          size_t chunk_bytes, const std::function<void(const std::vector<uint32_t>&)>& sink,
                          const std::function<void(const EncodeStats&)>& progress = {});

}  // namespace sixnd
