// A rank's piece of one unit of the flat parameter layout: the same [flat_begin, flat_begin +
// count) range in parameters, gradients, master weights and both Adam moments. `local` is the
// offset of the piece in the rank's shard buffers (its pieces concatenated). Shared by the ZeRO
// engine, which cuts the shard, and the optimizer, which updates it.
#pragma once
#include <cstddef>

namespace sixnd {

struct ShardSpan {
    int unit = 0;
    size_t flat_begin = 0;  // into the flat layout
    size_t count = 0;
    size_t local = 0;       // into this rank's shard buffers
};

}  // namespace sixnd
