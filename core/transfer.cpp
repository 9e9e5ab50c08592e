#include "core/transfer.h"

#include <algorithm>

#include "core/bf16.h"

namespace sixnd {

void upload_f32(MemoryBackend& mem, void* dst, DType dst_type, const float* src, size_t n) {
    if (dst_type == DType::f32) {
        mem.copy_to_device(dst, src, n * 4);
        return;
    }
    std::vector<char> bytes = to_storage(src, n, dst_type);
    mem.copy_to_device(dst, bytes.data(), bytes.size());
}

std::vector<float> download_f32(MemoryBackend& mem, const void* src, DType src_type, size_t n) {
    std::vector<float> out(n);
    if (src_type == DType::f32) {
        mem.copy_to_host(out.data(), src, n * 4);
        return out;
    }
    std::vector<bf16> tmp(n);
    mem.copy_to_host(tmp.data(), src, n * 2);
    for (size_t i = 0; i < n; i++) out[i] = static_cast<float>(tmp[i]);
    return out;
}

std::vector<char> to_storage(const float* v, size_t n, DType t) {
    std::vector<char> out(n * dtype_size(t));
    if (t == DType::f32) {
        std::copy(reinterpret_cast<const char*>(v), reinterpret_cast<const char*>(v) + out.size(), out.data());
        return out;
    }
    uint16_t* b = reinterpret_cast<uint16_t*>(out.data());
    for (size_t i = 0; i < n; i++) b[i] = bf16::from_float(v[i]);
    return out;
}

}  // namespace sixnd
