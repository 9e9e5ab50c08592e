#include "data/lsh.h"

#include <xxhash.h>

#include <algorithm>
#include <utility>

#include "data/minhash.h"

namespace sixnd::data {

namespace {

// Union-find whose root is always the smallest index, so "keep the root" keeps the earliest
// document whatever order the unions came in.
class MinUnionFind {
public:
    explicit MinUnionFind(size_t n) : parent_(n) {
        for (size_t i = 0; i < n; i++) parent_[i] = static_cast<uint32_t>(i);
    }
    uint32_t find(uint32_t x) {
        while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
        return x;
    }
    void unite(uint32_t a, uint32_t b) {
        a = find(a), b = find(b);
        if (a < b) parent_[b] = a;
        if (b < a) parent_[a] = b;
    }

private:
    std::vector<uint32_t> parent_;
};

}  // namespace

std::vector<uint32_t> lsh_clusters(const uint32_t* sigs, size_t n, const std::vector<bool>& active, const LshParams& p,
                                   const std::function<void(int)>& band_done) {
    const int k = p.bands * p.rows;
    // A bucket of many identical-band documents is compared against at most this many earlier
    // members before giving up on verification; boilerplate clusters would otherwise be quadratic.
    constexpr size_t kMaxTries = 32;
    MinUnionFind uf(n);
    std::vector<uint32_t> members;
    for (size_t i = 0; i < n; i++)
        if (active[i]) members.push_back(static_cast<uint32_t>(i));
    const size_t m = members.size();
    std::vector<std::pair<uint64_t, uint32_t>> keys(m);
    for (int b = 0; b < p.bands; b++) {
        // Threads only pay off for large sets; a parallel region costs more than hashing a few thousand bands.
#pragma omp parallel for schedule(static) if (m > 65536)
        for (size_t i = 0; i < m; i++) {
            const uint32_t* band = sigs + size_t{members[i]} * k + static_cast<size_t>(b) * p.rows;
            keys[i] = {XXH3_64bits(band, sizeof(uint32_t) * p.rows), members[i]};
        }
        std::sort(keys.begin(), keys.end());
        for (size_t s = 0; s < m;) {
            size_t e = s + 1;
            while (e < m && keys[e].first == keys[s].first) e++;
            for (size_t j = s + 1; j < e; j++) {
                uint32_t dj = keys[j].second;
                if (p.verify_threshold <= 0) {
                    uf.unite(keys[s].second, dj);
                    continue;
                }
                for (size_t i = s; i < j && i - s < kMaxTries; i++) {
                    uint32_t di = keys[i].second;
                    if (uf.find(di) == uf.find(dj)) break;
                    if (estimated_jaccard(sigs + size_t{di} * k, sigs + size_t{dj} * k, k) >= p.verify_threshold) {
                        uf.unite(di, dj);
                        break;
                    }
                }
            }
            s = e;
        }
        if (band_done) band_done(b + 1);
    }
    std::vector<uint32_t> rep(n);
    for (size_t i = 0; i < n; i++) rep[i] = uf.find(static_cast<uint32_t>(i));
    return rep;
}

}  // namespace sixnd::data
