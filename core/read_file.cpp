#include "core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"

namespace sixnd {

FileReader::FileReader(std::string path) : path_(std::move(path)) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before it could be refused
    // (reads at an offset need a regular file; the flag does nothing to one).
    fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd_ < 0) {
        const int err = errno;
        require_regular_file(path_);  // a socket, which fails the open itself, named as what it is
        throw Error(path_, std::string("cannot open: ") + std::strerror(err));
    }
    if (::fstat(fd_, &st) != 0) {
        const int err = errno;
        ::close(fd_);
        throw Error(path_, std::string("cannot open: ") + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd_);
        throw Error(path_, std::string("is ") + file_kind(st.st_mode) + ", not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
}

FileReader::~FileReader() { ::close(fd_); }

size_t FileReader::read(void* dst, uint64_t offset, size_t bytes) const {
    size_t got = 0;
    while (got < bytes) {
        const ssize_t n = ::pread(fd_, static_cast<char*>(dst) + got, bytes - got, static_cast<off_t>(offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(path_, std::string("read failed: ") + std::strerror(errno));
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    return got;
}

void FileReader::read_exactly(void* dst, uint64_t offset, size_t bytes) const {
    if (read(dst, offset, bytes) != bytes) throw Error(path_, "ended early: it changed while being read");
}

namespace {

std::filesystem::file_type type_of(const std::string& path, bool follow) {
    std::error_code ec;
    const std::filesystem::file_status st = follow ? std::filesystem::status(path, ec) : std::filesystem::symlink_status(path, ec);
    if (ec && st.type() != std::filesystem::file_type::not_found) throw Error(path, "cannot be looked at: " + ec.message());
    return st.type();
}

}  // namespace

std::filesystem::file_type path_type(const std::string& path) { return type_of(path, true); }

std::filesystem::file_type link_type(const std::string& path) { return type_of(path, false); }

void require_regular_file(const std::string& path, const std::string& what) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error(path, std::string("is ") + file_kind(st.st_mode) + ", not a " + what);
}

std::string read_whole_file(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    SIXND_CHECK(!S_ISDIR(st.st_mode), path, "is a directory, not a file");
    // A device has no end to read to (/dev/zero, /dev/urandom: memory would run out first). A pipe
    // (process substitution, /dev/stdin) ends when its writer does, and is read.
    SIXND_CHECK(!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode), path, "is a device, not a file");
    // A socket cannot be opened: the open would say only "No such device or address".
    SIXND_CHECK(!S_ISSOCK(st.st_mode), path, "is a socket, not a file");
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    std::string out;
    char buf[1 << 16];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, got);
    bool failed = std::ferror(f);
    int err = errno;
    std::fclose(f);
    if (failed) throw Error(path, std::string("read failed: ") + std::strerror(err));
    return out;
}

}  // namespace sixnd
