#include "data/output.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "data/shard.h"

namespace sixnd::data {

TokenSpool::TokenSpool(std::string path) : path_(std::move(path)) {
    f_ = std::fopen(path_.c_str(), "wb");
    if (!f_) throw Error(path_, std::string("cannot create scratch file: ") + std::strerror(errno));
}

TokenSpool::~TokenSpool() {
    if (f_) std::fclose(f_);
    if (map_) ::munmap(map_, map_bytes_);
}

size_t TokenSpool::append(const std::vector<uint32_t>& tokens) {
    if (!tokens.empty() && std::fwrite(tokens.data(), sizeof(uint32_t), tokens.size(), f_) != tokens.size())
        throw Error(path_, std::string("write failed: ") + std::strerror(errno));
    offsets_.push_back(offsets_.back() + tokens.size());
    return offsets_.size() - 2;
}

void TokenSpool::finish() {
    bool ok = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!ok) throw Error(path_, std::string("write failed: ") + std::strerror(errno));
    map_bytes_ = offsets_.back() * sizeof(uint32_t);
    if (map_bytes_ == 0) return;
    int fd = ::open(path_.c_str(), O_RDONLY);
    if (fd < 0) throw Error(path_, std::string("cannot reopen scratch file: ") + std::strerror(errno));
    void* m = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw Error(path_, std::string("cannot map scratch file: ") + std::strerror(errno));
    map_ = m;
    tokens_ = static_cast<const uint32_t*>(m);
}

ShardWriter::ShardWriter(std::string dir, std::string split, uint64_t shard_tokens, uint32_t eot)
    : dir_(std::move(dir)), split_(std::move(split)), shard_tokens_(shard_tokens), eot_(eot) {}

void ShardWriter::push(uint32_t t) {
    buf_.push_back(t);
    if (buf_.size() == shard_tokens_) flush();
}

void ShardWriter::add_document(const uint32_t* tokens, size_t n) {
    push(eot_);
    for (size_t i = 0; i < n; i++) push(tokens[i]);
    docs_++;
    total_ += n + 1;
}

void ShardWriter::flush() {
    if (buf_.empty()) return;
    char name[64];
    std::snprintf(name, sizeof name, "%s_%06zu.bin", split_.c_str(), shards_.size());
    write_shard(dir_ + "/" + name, buf_);
    shards_.push_back({name, buf_.size(), XXH3_64bits(buf_.data(), buf_.size() * sizeof(uint32_t))});
    buf_.clear();
}

void ShardWriter::finish() { flush(); }

}  // namespace sixnd::data
