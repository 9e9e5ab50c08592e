// What a rank stores in a checkpoint besides meta.json, and how it is read back — also at
// another world size or ZeRO stage (resharding): the parameters as one full buffer
// (params.bin, in the writer's layout), and each rank's optimizer state (optim-rank<r>.bin:
// its spans of the flat layout, then master weights if kept, m and v, FP32).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/memory.h"
#include "model/param_layout.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"

namespace sixnd {

// optim-rank<r>.bin: this header ("SIXNDOPT"), `spans` records, then the arrays of `floats`
// FP32 values each: master weights (when has_master), m, v.
struct OptimHeader {
    char magic[8];
    uint64_t spans, has_master, floats;
};
struct SpanRecord {
    uint64_t flat_begin, count, local;
};

// The optimizer state in its file's bytes, handed to `out` in pieces of a few MiB: a checkpoint
// writes them straight to its file, with no host copy of the whole state (12 bytes a parameter
// at ZeRO-0) beside the run's own.
void write_optimizer(AdamW& opt, MemoryBackend& mem, const std::function<void(const void*, size_t)>& out);
// The same bytes in memory (an --on-spike snapshot).
std::vector<char> pack_optimizer(AdamW& opt, MemoryBackend& mem);

// A packed optimizer state on the host, as FP32 arrays in shard order (master empty when not kept).
struct OptimizerArrays {
    std::vector<float> master, m, v;
};
OptimizerArrays unpack_optimizer(const std::vector<char>& packed, const std::string& where);
// Puts back a state pack_optimizer took from this same optimizer (same spans): an in-memory
// snapshot for --on-spike, restored bit for bit.
void restore_packed_optimizer(AdamW& opt, MemoryBackend& mem, const std::vector<char>& packed);

// The layout the checkpoint was written in: its model, cut into units aligned as the writer's
// world size required (meta.json's unit_align).
ParamLayout written_layout(const CheckpointReader& ck);

// Fills opt's state (on device) from every optimizer file of the checkpoint; `now` is this
// run's layout. Works for any old and new sharding. Reads each file's header and span records,
// then only the byte ranges that land in this rank's spans (of them, only what no later file
// overwrites), a few MiB at a time, straight into opt's buffers: no full-model buffer, no whole
// file in memory. Every file is checked (magic, size against its header, spans inside the
// model) before the state is touched; where two files hold the same element the later rank's
// wins, and what no file holds (padding of `now`) is zero.
void restore_optimizer(AdamW& opt, MemoryBackend& mem, const CheckpointReader& ck, const ParamLayout& now);

// params.bin in layout `now`, as storage-dtype bytes: the one loader of parameters, shared by
// the trainer, `sixnd sample` and `sixnd eval`. Throws Error naming params.bin when its size
// does not match meta.json or it holds a non-finite value.
std::vector<char> restore_params(const CheckpointReader& ck, const ParamLayout& now);

}  // namespace sixnd
