// Output: tokens are spooled to a scratch file as documents are encoded (so no document text
// is held), then laid out into llm.c shards of a fixed token count, with the end-of-text token
// before every document as llm.c's preparation scripts do.
#pragma once
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "data/shard.h"

namespace sixnd::data {

// An append-only file of uint32 tokens, read back through a memory map.
class TokenSpool {
public:
    explicit TokenSpool(std::string path);
    ~TokenSpool();
    TokenSpool(const TokenSpool&) = delete;
    TokenSpool& operator=(const TokenSpool&) = delete;

    // Appends one document's tokens; returns its index.
    size_t append(const std::vector<uint32_t>& tokens);
    // Closes the writer and maps the file; doc() is usable afterwards.
    void finish();
    const uint32_t* doc(size_t i, size_t& n) const {
        n = offsets_[i + 1] - offsets_[i];
        return tokens_ + offsets_[i];
    }
    size_t docs() const { return offsets_.size() - 1; }

private:
    std::string path_;
    FILE* f_ = nullptr;
    std::vector<uint64_t> offsets_{0};
    std::unique_ptr<MappedFile> map_;
    const uint32_t* tokens_ = nullptr;
};

struct ShardInfo {
    std::string file;  // name inside the output directory
    uint64_t tokens;
    uint64_t hash;     // XXH3-64 of the token values as written
};

// Cuts a stream of documents into shards named <split>_NNNNNN.bin; documents may straddle two
// shards, as in llm.c, so every shard but the last holds exactly shard_tokens tokens. The token
// width follows the vocabulary (data/shard.h). Tokens go straight to the open shard's file:
// memory does not grow with --shard-tokens.
class ShardWriter {
public:
    ShardWriter(std::string dir, std::string split, uint64_t shard_tokens, uint32_t eot, size_t vocab_size);
    void add_document(const uint32_t* tokens, size_t n);
    void finish();
    const std::vector<ShardInfo>& shards() const { return shards_; }
    uint64_t documents() const { return docs_; }
    uint64_t tokens() const { return total_; }

private:
    void write(const uint32_t* tokens, size_t n);
    void close_shard();

    std::string dir_, split_;
    uint64_t shard_tokens_;
    uint32_t eot_;
    size_t vocab_size_;
    std::unique_ptr<ShardFileWriter> file_;  // the shard being written, if any
    std::string file_name_;
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> hash_{XXH3_createState(), &XXH3_freeState};
    std::vector<ShardInfo> shards_;
    uint64_t docs_ = 0, total_ = 0;
};

}  // namespace sixnd::data
