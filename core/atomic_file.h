// Output that appears whole or not at all: written under a temporary name beside the target and
// renamed over it on commit, so a crash or an error mid-write never leaves half a file.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace sixnd {

class AtomicFile {
public:
    explicit AtomicFile(std::string path);  // throws Error(path, ...) when it cannot be created
    ~AtomicFile();                          // removes the temporary file unless committed
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, size_t bytes);
    void write(std::string_view s) { write(s.data(), s.size()); }
    // Rewrites bytes at an offset (e.g. a header whose counts are known only at the end).
    void write_at(long offset, const void* data, size_t bytes);
    void commit();

private:
    std::string path_, temp_;
    FILE* f_ = nullptr;
};

void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace sixnd
