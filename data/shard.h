// llm.c token shards: a header of 256 int32 — magic, version, token count — then the tokens.
// Version 1 (magic 20240520) stores uint16 tokens; version 7 (magic 20240801) stores uint32
// tokens for vocabularies over 65,536 ids. Reading llm.c's shards and writing shards llm.c can
// read is a feature, so these are the only token files sixnd uses.
//
// The width is chosen by the vocabulary, never by the tokens a shard happens to hold (as llm.c's
// writers choose it by the tokenizer): every shard of one data set then has the same format, and
// a token beyond the vocabulary is an error at write time rather than a silently wider file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/mapped_file.h"

namespace sixnd {

constexpr int32_t kShardMagicU16 = 20240520;
constexpr int32_t kShardVersionU16 = 1;
constexpr int32_t kShardMagicU32 = 20240801;
constexpr int32_t kShardVersionU32 = 7;
constexpr size_t kShardHeaderInts = 256;
constexpr size_t kShardU16Vocab = 65536;  // ids 0..65535 fit uint16

// A read-only, memory-mapped shard. Validates header, version and file size on open.
// The header of a shard of `size` bytes starting at `bytes`: its token width (2 or 4) and count,
// every fault (short, bad magic or version, a count the size does not hold) an Error naming
// `where`. Shard reads a mapped file's; `tokenizer decode` a shard's bytes from a pipe.
struct ShardHeader {
    int token_bytes = 2;
    size_t tokens = 0;
};
ShardHeader parse_shard_header(const unsigned char* bytes, size_t size, const std::string& where);

class Shard {
public:
    explicit Shard(const std::string& path);

    const std::string& path() const { return map_.path(); }
    size_t size() const { return ntok_; }
    size_t file_bytes() const { return map_.size(); }
    uint32_t operator[](size_t i) const {
        return token_bytes_ == 2 ? reinterpret_cast<const uint16_t*>(tokens_)[i]
                                 : reinterpret_cast<const uint32_t*>(tokens_)[i];
    }
    // out[k] = token (begin + k), k < count, copied so that a shard another process truncates
    // meanwhile is an Error naming it (MappedFile::copy_out), not a crash or zeros taken for
    // tokens: the read of a run's batches.
    void read(size_t begin, size_t count, int32_t* out) const;
    // Largest token id (scans once, cached), for checking against a vocabulary.
    uint32_t max_token() const;
    // XXH3-64 of the token values as uint32, whatever the width on disk: the data manifest's
    // "tokens_xxh3_64" (data/output.cpp hashes the same values before writing them). Computed
    // once and cached: a manifest's check and the run's data identity both ask for it.
    uint64_t tokens_hash() const;
    // f(tokens, n) over the whole shard in order, in chunks read through read(): the full passes
    // (the vocabulary checks, the content hash).
    void for_each_chunk(const std::function<void(const int32_t*, size_t)>& f) const;

private:

    MappedFile map_;
    const unsigned char* tokens_ = nullptr;
    size_t ntok_ = 0;
    int token_bytes_ = 2;
    mutable int64_t max_token_ = -1;
    mutable std::optional<uint64_t> tokens_hash_;
};

// A shard written as tokens arrive (the count goes into the header at the end), atomically:
// nothing appears at path unless finish() is reached. uint16 when vocab_size <= 65,536.
class ShardFileWriter {
public:
    ShardFileWriter(const std::string& path, size_t vocab_size);
    // Throws Error(path, ...) for a token >= vocab_size.
    void write(const uint32_t* tokens, size_t n);
    void write(const std::vector<uint32_t>& tokens) { write(tokens.data(), tokens.size()); }
    void finish();
    uint64_t tokens() const { return count_; }

private:
    std::string path_;
    AtomicFile file_;
    size_t vocab_size_;
    bool wide_;
    uint64_t count_ = 0;
    std::vector<uint16_t> narrow_;
};

// One whole shard at once (the same writer and rule).
void write_shard(const std::string& path, const std::vector<uint32_t>& tokens, size_t vocab_size = kShardU16Vocab);

// Sorted paths matching a glob, or the pattern itself where it matches nothing but is an existing
// path (a name with '[' or '*' in it); throws Error naming the pattern when nothing matches or
// it cannot be looked up (a link loop or an unsearchable directory on its way), and one naming a
// directory the pattern reaches but that cannot be listed (a link loop, no permission).
std::vector<std::string> expand_glob(const std::string& pattern);

}  // namespace sixnd
