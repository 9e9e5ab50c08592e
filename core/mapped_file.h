// A read-only memory map of a whole regular file: token shards, and the data pipeline's scratch
// files read back. Errors name the file, what it was supposed to be, and the reason.
#pragma once
#include <cstddef>
#include <string>

namespace sixnd {

class MappedFile {
public:
    // `what` names the file's role in errors ("token shard", "scratch file"). An empty file maps
    // to data() == nullptr, size() == 0. Anything but a regular file (a directory, a device) is
    // refused with a message saying what it is.
    MappedFile(const std::string& path, const std::string& what);
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    MappedFile& operator=(MappedFile&&) = delete;

    const unsigned char* data() const { return static_cast<const unsigned char*>(map_); }
    size_t size() const { return bytes_; }

private:
    void* map_ = nullptr;
    size_t bytes_ = 0;
};

}  // namespace sixnd
