// Host FP32 <-> device buffers of a storage dtype. Conversion happens on the host, so these
// are for set-up, checkpoints and tests, not for the training hot path.
#pragma once
#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"

namespace sixnd {

void upload_f32(MemoryBackend& mem, void* dst, DType dst_type, const float* src, size_t n);
std::vector<float> download_f32(MemoryBackend& mem, const void* src, DType src_type, size_t n);

// Host-only conversion of FP32 values to the bytes of a storage dtype.
std::vector<char> to_storage(const float* v, size_t n, DType t);

}  // namespace sixnd
