#include "tokenizer/bpe_merges.h"

#include <queue>

namespace sixnd::bpe {
namespace {

constexpr uint32_t kNone = ~uint32_t(0);

uint32_t rank_of(const MergeTable& merges, uint32_t a, uint32_t b) {
    const Merge* m = merges.find(a, b);
    return m ? m->rank : kNone;
}

// Short pieces (nearly all of them): rescanning a small rank array beats any bookkeeping.
void apply_short(const MergeTable& merges, std::vector<uint32_t>& ids) {
    const size_t n0 = ids.size();
    uint32_t ranks_buf[256];
    uint32_t* ranks = ranks_buf;
    for (size_t i = 0; i + 1 < n0; i++) ranks[i] = rank_of(merges, ids[i], ids[i + 1]);
    size_t n = n0;
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (ranks[i] < ranks[best]) best = i;
        if (ranks[best] == kNone) break;
        ids[best] = merges.find(ids[best], ids[best + 1])->id;
        for (size_t i = best + 1; i + 1 < n; i++) ids[i] = ids[i + 1];
        for (size_t i = best + 1; i + 2 < n; i++) ranks[i] = ranks[i + 1];
        n--;
        if (best > 0) ranks[best - 1] = rank_of(merges, ids[best - 1], ids[best]);
        if (best + 1 < n) ranks[best] = rank_of(merges, ids[best], ids[best + 1]);
    }
    ids.resize(n);
}

// Long pieces (a megabyte of spaces is one GPT-2 piece): a heap of candidate pairs over a
// linked list keeps this O(n log n). Entries go stale when a neighbour merges; they are checked
// when popped.
void apply_long(const MergeTable& merges, std::vector<uint32_t>& ids) {
    const size_t n = ids.size();
    std::vector<size_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (size_t i = 0; i < n; i++) {
        prev[i] = i - 1;  // wraps to SIZE_MAX at 0: "none"
        next[i] = i + 1;  // n: "none"
    }
    using Entry = std::pair<uint64_t, size_t>;  // (rank << 32 | right id, left position)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    auto push = [&](size_t i) {
        if (i >= n || next[i] >= n) return;
        uint32_t r = rank_of(merges, ids[i], ids[next[i]]);
        if (r != kNone) heap.push({(static_cast<uint64_t>(r) << 32) | ids[next[i]], i});
    };
    for (size_t i = 0; i + 1 < n; i++) push(i);
    while (!heap.empty()) {
        auto [key, i] = heap.top();
        heap.pop();
        uint32_t r = static_cast<uint32_t>(key >> 32);
        if (!alive[i] || next[i] >= n || ids[next[i]] != static_cast<uint32_t>(key) ||
            rank_of(merges, ids[i], ids[next[i]]) != r)
            continue;
        size_t j = next[i];
        ids[i] = merges.find(ids[i], ids[j])->id;
        alive[j] = false;
        next[i] = next[j];
        if (next[j] < n) prev[next[j]] = i;
        if (prev[i] < n) push(prev[i]);
        push(i);
    }
    size_t out = 0;
    for (size_t i = 0; i < n; i = next[i]) ids[out++] = ids[i];
    ids.resize(out);
}

}  // namespace

void apply_merges(const MergeTable& merges, std::vector<uint32_t>& ids) {
    if (ids.size() < 2) return;
    if (ids.size() <= 256)
        apply_short(merges, ids);
    else
        apply_long(merges, ids);
}

}  // namespace sixnd::bpe
