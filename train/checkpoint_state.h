// What a rank stores in a checkpoint besides meta.json, and how it is read back — also at
// another world size or ZeRO stage (resharding): the parameters as one full buffer
// (params.bin, in the writer's layout), and each rank's optimizer state (optim-rank<r>.bin:
// its spans of the flat layout, then master weights if kept, m and v, FP32).
#pragma once
#include <vector>

#include "core/memory.h"
#include "model/param_layout.h"
#include "train/checkpoint.h"
#include "train/optimizer.h"

namespace sixnd {

std::vector<char> pack_optimizer(AdamW& opt, MemoryBackend& mem);

// Fills opt's state (on device) from every optimizer file of the checkpoint, which was written
// in layout `written`; `now` is this run's layout. Works for any old and new sharding.
void restore_optimizer(AdamW& opt, MemoryBackend& mem, const CheckpointReader& ck, const ParamLayout& written,
                       const ParamLayout& now);

// params.bin in this run's layout (storage dtype bytes, es bytes per element).
std::vector<char> restore_params(const CheckpointReader& ck, const ParamLayout& written, const ParamLayout& now,
                                 size_t es);

}  // namespace sixnd
