// A 64-bit value as 16 lower-case hex digits: how checksums and content hashes are written
// into manifests, checkpoints and run logs.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace sixnd {

inline std::string hex64(uint64_t v) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
}

}  // namespace sixnd
