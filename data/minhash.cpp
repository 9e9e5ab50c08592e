#include "data/minhash.h"

#include <algorithm>

#include "core/rng.h"

namespace sixnd::data {

MinHasher::MinHasher(const MinHashParams& p) : p_(p), a_(p.size()), b_(p.size()) {
    uint64_t s = p.seed;
    for (int i = 0; i < p.size(); i++) {
        a_[i] = splitmix64(s) | 1;  // odd, so x -> a*x is a bijection of 64-bit words
        b_[i] = splitmix64(s);
    }
}

bool MinHasher::signature(const NormWords& words, uint32_t* sig) const {
    if (words.size() == 0) return false;
    const int k = p_.size();
    for (int j = 0; j < k; j++) sig[j] = UINT32_MAX;
    size_t n = std::min(words.size(), static_cast<size_t>(p_.ngram));
    const uint64_t* a = a_.data();
    const uint64_t* b = b_.data();
    for (size_t i = 0; i + n <= words.size(); i++) {
        uint64_t h = hash_bytes(words.span(i, n));
        for (int j = 0; j < k; j++) {
            uint32_t v = static_cast<uint32_t>((a[j] * h + b[j]) >> 32);
            sig[j] = std::min(sig[j], v);
        }
    }
    return true;
}

double estimated_jaccard(const uint32_t* x, const uint32_t* y, int n) {
    int eq = 0;
    for (int i = 0; i < n; i++) eq += x[i] == y[i];
    return static_cast<double>(eq) / n;
}

}  // namespace sixnd::data
