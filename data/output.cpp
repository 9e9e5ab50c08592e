#include "data/output.h"

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
    map_ = std::make_unique<MappedFile>(path_, "scratch file");
    if (map_->size() != offsets_.back() * sizeof(uint32_t)) throw Error(path_, "scratch file changed size while in use");
    tokens_ = reinterpret_cast<const uint32_t*>(map_->data());
}

ShardWriter::ShardWriter(std::string dir, std::string split, uint64_t shard_tokens, uint32_t eot, size_t vocab_size)
    : dir_(std::move(dir)), split_(std::move(split)), shard_tokens_(shard_tokens), eot_(eot), vocab_size_(vocab_size) {}

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
    write_shard(dir_ + "/" + name, buf_, vocab_size_);
    shards_.push_back({name, buf_.size(), XXH3_64bits(buf_.data(), buf_.size() * sizeof(uint32_t))});
    buf_.clear();
}

void ShardWriter::finish() { flush(); }

}  // namespace sixnd::data
