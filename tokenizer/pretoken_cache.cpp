#include "tokenizer/pretoken_cache.h"

#include <array>
#include <cstring>
#include <memory>

#include <xxhash.h>

namespace sixnd::bpe {
namespace {

constexpr size_t kSlots = size_t(1) << 16;
constexpr size_t kMaxEntries = kSlots / 2;
// Per-thread tokenizers remembered at once; a thread rarely uses more than one.
constexpr size_t kTokenizersPerThread = 4;

}  // namespace

uint64_t hash_piece(std::string_view piece) { return XXH3_64bits(piece.data(), piece.size()); }

PretokenCache::PretokenCache() : slots_(kSlots) {}

const uint32_t* PretokenCache::find(std::string_view key, uint64_t hash, uint32_t* count) const {
    for (size_t i = hash & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
        const Slot& s = slots_[i];
        if (!s.used) return nullptr;
        if (s.hash == hash && s.key_len == key.size() &&
            std::memcmp(keys_.data() + s.key_off, key.data(), key.size()) == 0) {
            *count = s.val_len;
            return vals_.data() + s.val_off;
        }
    }
}

void PretokenCache::insert(std::string_view key, uint64_t hash, const uint32_t* ids, uint32_t count) {
    if (key.size() > kMaxKey) return;
    if (used_ >= kMaxEntries) clear();
    size_t i = hash & (kSlots - 1);
    while (slots_[i].used) i = (i + 1) & (kSlots - 1);
    Slot& s = slots_[i];
    s.used = true;
    s.hash = hash;
    s.key_off = static_cast<uint32_t>(keys_.size());
    s.key_len = static_cast<uint16_t>(key.size());
    s.val_off = static_cast<uint32_t>(vals_.size());
    s.val_len = static_cast<uint16_t>(count);
    keys_.append(key);
    vals_.insert(vals_.end(), ids, ids + count);
    used_++;
}

void PretokenCache::clear() {
    for (auto& s : slots_) s = Slot();
    keys_.clear();
    vals_.clear();
    used_ = 0;
}

PretokenCache& PretokenCache::for_thread(uint64_t serial) {
    struct Entry {
        uint64_t serial = 0;
        std::unique_ptr<PretokenCache> cache;
    };
    thread_local std::array<Entry, kTokenizersPerThread> entries;
    thread_local size_t next_victim = 0;
    for (auto& e : entries)
        if (e.cache && e.serial == serial) return *e.cache;
    Entry& e = entries[next_victim];
    next_victim = (next_victim + 1) % kTokenizersPerThread;
    e.serial = serial;
    e.cache = std::make_unique<PretokenCache>();
    return *e.cache;
}

}  // namespace sixnd::bpe
