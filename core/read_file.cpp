#include "core/read_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/atomic_file.h"
#include "core/error.h"

namespace sixnd {

void require_regular_file(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error(path, std::string("is ") + file_kind(st.st_mode) + ", not a regular file");
}

std::string read_whole_file(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    SIXND_CHECK(!S_ISDIR(st.st_mode), path, "is a directory, not a file");
    // A device has no end to read to (/dev/zero, /dev/urandom: memory would run out first). A pipe
    // (process substitution, /dev/stdin) ends when its writer does, and is read.
    SIXND_CHECK(!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode), path, "is a device, not a file");
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
