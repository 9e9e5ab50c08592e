// A cache from pre-token bytes to its ids. Natural text repeats a few thousand pieces most of the
// time, so most pieces skip BPE entirely. Each thread has its own caches (no locks, no races),
// one per tokenizer it uses, keyed by the tokenizer's serial number.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sixnd::bpe {

class PretokenCache {
public:
    // Pieces longer than this are not cached: they rarely repeat and would crowd out the rest.
    static constexpr size_t kMaxKey = 64;

    PretokenCache();
    // The cached ids for key (hash = hash_piece(key)), or nullptr.
    const uint32_t* find(std::string_view key, uint64_t hash, uint32_t* count) const;
    // Starts afresh when full, which bounds memory without the cost of LRU bookkeeping.
    void insert(std::string_view key, uint64_t hash, const uint32_t* ids, uint32_t count);

    // The calling thread's cache for the tokenizer with this serial number.
    static PretokenCache& for_thread(uint64_t serial);

private:
    struct Slot {
        uint64_t hash = 0;
        uint32_t key_off = 0, val_off = 0;
        uint16_t key_len = 0, val_len = 0;
        bool used = false;
    };
    void clear();

    std::vector<Slot> slots_;
    std::string keys_;
    std::vector<uint32_t> vals_;
    size_t used_ = 0;
};

uint64_t hash_piece(std::string_view piece);

}  // namespace sixnd::bpe
