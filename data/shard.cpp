#include "data/shard.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/atomic_file.h"
#include "core/error.h"

namespace sixnd {

Shard::Shard(const std::string& path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) throw Error(path, std::string("cannot open token shard: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        throw Error(path, std::string("cannot stat token shard: ") + std::strerror(errno));
    }
    size_t bytes = static_cast<size_t>(st.st_size);
    if (bytes < kShardHeaderInts * 4) {
        ::close(fd);
        throw Error(path, "not a token shard: " + std::to_string(bytes) + " bytes is shorter than the 1024-byte header");
    }
    void* m = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw Error(path, std::string("cannot map token shard: ") + std::strerror(errno));
    map_ = m;
    map_bytes_ = bytes;
    const int32_t* h = static_cast<const int32_t*>(m);
    auto fail = [&](const std::string& fault) {
        ::munmap(map_, map_bytes_);
        map_ = nullptr;
        throw Error(path, fault);
    };
    if (h[0] == kShardMagicU16) {
        if (h[1] != kShardVersionU16) fail("unsupported shard version " + std::to_string(h[1]) + " for magic 20240520 (expected 1)");
        token_bytes_ = 2;
    } else if (h[0] == kShardMagicU32) {
        if (h[1] != kShardVersionU32) fail("unsupported shard version " + std::to_string(h[1]) + " for magic 20240801 (expected 7)");
        token_bytes_ = 4;
    } else {
        fail("bad magic " + std::to_string(h[0]) + " (expected 20240520 or 20240801): not an llm.c token shard");
    }
    if (h[2] < 0) fail("negative token count in header");
    ntok_ = static_cast<size_t>(h[2]);
    size_t expect = kShardHeaderInts * 4 + ntok_ * token_bytes_;
    if (expect != bytes)
        fail("header says " + std::to_string(ntok_) + " tokens (" + std::to_string(expect) + " bytes) but the file has " +
             std::to_string(bytes) + " bytes");
    tokens_ = static_cast<const unsigned char*>(m) + kShardHeaderInts * 4;
}

Shard::Shard(Shard&& o) noexcept
    : path_(std::move(o.path_)), map_(o.map_), map_bytes_(o.map_bytes_), tokens_(o.tokens_), ntok_(o.ntok_),
      token_bytes_(o.token_bytes_), max_token_(o.max_token_) {
    o.map_ = nullptr;
}

Shard::~Shard() {
    if (map_) ::munmap(map_, map_bytes_);
}

uint32_t Shard::max_token() const {
    if (max_token_ < 0) {
        uint32_t mx = 0;
        for (size_t i = 0; i < ntok_; i++) mx = std::max(mx, (*this)[i]);
        max_token_ = mx;
    }
    return static_cast<uint32_t>(max_token_);
}

void write_shard(const std::string& path, const std::vector<uint32_t>& tokens) {
    if (tokens.size() > static_cast<size_t>(INT32_MAX)) throw Error(path, "too many tokens for one shard");
    bool wide = std::any_of(tokens.begin(), tokens.end(), [](uint32_t t) { return t > 65535u; });
    int32_t header[kShardHeaderInts] = {};
    header[0] = wide ? kShardMagicU32 : kShardMagicU16;
    header[1] = wide ? kShardVersionU32 : kShardVersionU16;
    header[2] = static_cast<int32_t>(tokens.size());
    AtomicFile f(path);
    f.write(header, sizeof header);
    if (wide) {
        f.write(tokens.data(), tokens.size() * 4);
    } else {
        std::vector<uint16_t> narrow(tokens.begin(), tokens.end());
        f.write(narrow.data(), narrow.size() * 2);
    }
    f.commit();
}

std::vector<std::string> expand_glob(const std::string& pattern) {
    glob_t g{};
    int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> out;
    if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; i++) out.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (out.empty()) throw Error(pattern, "no files match");
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace sixnd
