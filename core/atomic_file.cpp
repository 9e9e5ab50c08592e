#include "core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace sixnd {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    temp_ = path_ + ".tmp." + std::to_string(getpid());
    f_ = std::fopen(temp_.c_str(), "wb");
    if (!f_) throw Error(path_, std::string("cannot create the output: ") + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
    if (!f_) return;
    std::fclose(f_);
    std::remove(temp_.c_str());
}

void AtomicFile::write(const void* data, size_t bytes) {
    if (bytes && std::fwrite(data, 1, bytes, f_) != bytes)
        throw Error(path_, std::string("write failed: ") + std::strerror(errno));
}

void AtomicFile::write_at(long offset, const void* data, size_t bytes) {
    long end = std::ftell(f_);
    if (std::fseek(f_, offset, SEEK_SET) != 0) throw Error(path_, std::string("seek failed: ") + std::strerror(errno));
    write(data, bytes);
    std::fseek(f_, end, SEEK_SET);
}

void AtomicFile::commit() {
    FILE* f = f_;
    f_ = nullptr;
    bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = errno;
    ok = std::fclose(f) == 0 && ok;
    if (ok && std::rename(temp_.c_str(), path_.c_str()) == 0) return;
    if (ok) err = errno;
    std::remove(temp_.c_str());
    throw Error(path_, std::string("cannot finish writing: ") + std::strerror(err));
}

void write_file_atomically(const std::string& path, std::string_view content) {
    AtomicFile f(path);
    f.write(content);
    f.commit();
}

}  // namespace sixnd
