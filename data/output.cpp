#include "data/output.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

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

void ShardWriter::add_document(const uint32_t* tokens, size_t n) {
    write(&eot_, 1);
    write(tokens, n);
    docs_++;
    total_ += n + 1;
}

void ShardWriter::write(const uint32_t* tokens, size_t n) {
    while (n > 0) {
        if (!file_) {
            char name[64];
            std::snprintf(name, sizeof name, "%s_%06zu.bin", split_.c_str(), shards_.size());
            file_name_ = name;
            file_ = std::make_unique<ShardFileWriter>(dir_ + "/" + file_name_, vocab_size_);
            XXH3_64bits_reset(hash_.get());
        }
        size_t k = static_cast<size_t>(std::min<uint64_t>(n, shard_tokens_ - file_->tokens()));
        file_->write(tokens, k);
        XXH3_64bits_update(hash_.get(), tokens, k * sizeof(uint32_t));
        tokens += k;
        n -= k;
        if (file_->tokens() == shard_tokens_) close_shard();
    }
}

void ShardWriter::close_shard() {
    file_->finish();
    shards_.push_back({file_name_, file_->tokens(), XXH3_64bits_digest(hash_.get())});
    file_.reset();
}

void ShardWriter::finish() {
    if (file_) close_shard();
}

}  // namespace sixnd::data
