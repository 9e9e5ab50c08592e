// A read-only memory map of a whole regular file: token shards, and the data pipeline's scratch
// files read back. Errors name the file, what it was supposed to be, and the reason.
#pragma once
#include <cstddef>
#include <string>

namespace sixnd {

class MappedFile {
public:
    // `what` names the file's role in errors ("token shard", "scratch file"). An empty file maps
    // to data() == nullptr, size() == 0. Anything but a regular file (a directory, a device, a
    // socket) is refused with a message saying what it is.
    MappedFile(const std::string& path, const std::string& what);
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    MappedFile& operator=(MappedFile&&) = delete;

    const std::string& path() const { return path_; }
    const unsigned char* data() const { return static_cast<const unsigned char*>(map_); }
    size_t size() const { return bytes_; }

    // Copies bytes [offset, offset + n) to dst, for reads while another process may change the
    // file: one that truncates it makes a read past the new end raise SIGBUS, and the rest of the
    // last page read as zeros. Both become Error(path, "shrank ..."): the copy runs under a SIGBUS
    // handler that jumps back here, and the file is checked after the copy. One rewritten in
    // place (its modification time moved: `cp` over it, an editor) is an Error too: its new bytes
    // show through the map, and the tokens read would be neither the old file's nor the new one's.
    void copy_out(size_t offset, size_t n, void* dst) const;

private:
    [[noreturn]] void shrank() const;
    [[noreturn]] void changed() const;
    std::string path_, what_;
    void* map_ = nullptr;
    size_t bytes_ = 0;
    unsigned long dev_ = 0, ino_ = 0;  // the file mapped (a file renamed over it is another)
    long long mtime_s_ = 0, mtime_ns_ = 0;  // its modification time when mapped
};

}  // namespace sixnd
