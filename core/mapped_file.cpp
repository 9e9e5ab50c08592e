#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"
#include "core/error.h"

namespace sixnd {

MappedFile::MappedFile(const std::string& path, const std::string& what) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path, "cannot open " + what + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        throw Error(path, "cannot stat " + what + ": " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(path, std::string("is ") + file_kind(st.st_mode) + ", not a " + what);
    }
    bytes_ = static_cast<size_t>(st.st_size);
    if (bytes_ > 0) {
        void* m = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            throw Error(path, "cannot map " + what + ": " + std::strerror(err));
        }
        map_ = m;
    }
    ::close(fd);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : map_(o.map_), bytes_(o.bytes_) {
    o.map_ = nullptr;
    o.bytes_ = 0;
}

MappedFile::~MappedFile() {
    if (map_) ::munmap(map_, bytes_);
}

}  // namespace sixnd
