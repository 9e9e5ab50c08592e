// An open-addressing hash map from 64-bit keys to values, for the hot paths of BPE (merge
// lookups while encoding, pair counts while training) where std::unordered_map's node
// allocations and pointer chasing dominate. Entries are never erased: BPE only ever adds pairs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace sixnd::bpe {

inline uint64_t pair_key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }
inline uint32_t pair_left(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
inline uint32_t pair_right(uint64_t key) { return static_cast<uint32_t>(key); }

template <class V>
class FlatMap {
public:
    explicit FlatMap(size_t expected = 16) { rehash(capacity_for(expected)); }

    size_t size() const { return size_; }

    const V* find(uint64_t key) const {
        for (size_t i = slot(key);; i = (i + 1) & mask_) {
            if (keys_[i] == key) return &values_[i];
            if (keys_[i] == kEmpty) return nullptr;
        }
    }
    V* find(uint64_t key) { return const_cast<V*>(static_cast<const FlatMap*>(this)->find(key)); }

    // The value for key, default-constructed when new; `inserted` says which.
    V& get(uint64_t key, bool* inserted = nullptr) {
        if ((size_ + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
        size_t i = slot(key);
        for (; keys_[i] != kEmpty; i = (i + 1) & mask_)
            if (keys_[i] == key) {
                if (inserted) *inserted = false;
                return values_[i];
            }
        keys_[i] = key;
        values_[i] = V();
        size_++;
        if (inserted) *inserted = true;
        return values_[i];
    }

    template <class F>
    void for_each(F&& f) const {
        for (size_t i = 0; i < keys_.size(); i++)
            if (keys_[i] != kEmpty) f(keys_[i], values_[i]);
    }

private:
    // No BPE pair has both halves equal to 0xFFFFFFFF: ids stay far below that.
    static constexpr uint64_t kEmpty = ~uint64_t(0);

    static size_t capacity_for(size_t n) {
        size_t c = 16;
        while (c < n * 2) c *= 2;
        return c;
    }
    size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }

    void rehash(size_t capacity) {
        std::vector<uint64_t> old_keys(capacity, kEmpty);
        std::vector<V> old_values(capacity);
        old_keys.swap(keys_);
        old_values.swap(values_);
        mask_ = capacity - 1;
        shift_ = 64;
        for (size_t c = capacity; c > 1; c >>= 1) shift_--;
        for (size_t i = 0; i < old_keys.size(); i++) {
            if (old_keys[i] == kEmpty) continue;
            size_t j = slot(old_keys[i]);
            while (keys_[j] != kEmpty) j = (j + 1) & mask_;
            keys_[j] = old_keys[i];
            values_[j] = std::move(old_values[i]);
        }
    }

    std::vector<uint64_t> keys_;
    std::vector<V> values_;
    size_t size_ = 0;
    size_t mask_ = 0;
    int shift_ = 64;
};

}  // namespace sixnd::bpe
