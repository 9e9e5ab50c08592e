// llm.c token shards: a header of 256 int32 — magic, version, token count — then the tokens.
// Version 1 (magic 20240520) stores uint16 tokens; version 7 (magic 20240801) stores uint32
// tokens for vocabularies over 65,535. Reading llm.c's shards and writing shards llm.c can read
// is a feature, so these are the only token files sixnd uses.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sixnd {

constexpr int32_t kShardMagicU16 = 20240520;
constexpr int32_t kShardVersionU16 = 1;
constexpr int32_t kShardMagicU32 = 20240801;
constexpr int32_t kShardVersionU32 = 7;
constexpr size_t kShardHeaderInts = 256;

// A read-only, memory-mapped shard. Validates header, version and file size on open.
class Shard {
public:
    explicit Shard(const std::string& path);
    ~Shard();
    Shard(const Shard&) = delete;
    Shard& operator=(const Shard&) = delete;
    Shard(Shard&& o) noexcept;
    Shard& operator=(Shard&&) = delete;

    const std::string& path() const { return path_; }
    size_t size() const { return ntok_; }
    int token_bytes() const { return token_bytes_; }
    uint32_t operator[](size_t i) const {
        return token_bytes_ == 2 ? reinterpret_cast<const uint16_t*>(tokens_)[i]
                                 : reinterpret_cast<const uint32_t*>(tokens_)[i];
    }
    // Largest token id (scans once, cached), for checking against a vocabulary.
    uint32_t max_token() const;

private:
    std::string path_;
    void* map_ = nullptr;
    size_t map_bytes_ = 0;
    const unsigned char* tokens_ = nullptr;
    size_t ntok_ = 0;
    int token_bytes_ = 2;
    mutable int64_t max_token_ = -1;
};

// Writes a shard atomically (temporary name, then rename). uint16 unless a token exceeds 65,535.
void write_shard(const std::string& path, const std::vector<uint32_t>& tokens);

// Sorted paths matching a glob; throws Error naming the pattern when nothing matches.
std::vector<std::string> expand_glob(const std::string& pattern);

}  // namespace sixnd
