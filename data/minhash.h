// MinHash signatures over word n-gram shingles (FineWeb's setting by default: 5-grams, 14 bands
// of 8 rows). Each shingle is hashed once with 64-bit xxHash; the bands*rows hash functions are
// then multiply-add-shift, the top 32 bits of a*h + b mod 2^64 with a odd and (a, b) drawn from
// the seed. Unlike the textbook a*h + b mod (2^61 - 1) this needs no 128-bit product, so the
// inner loop vectorises (4x faster with AVX2, 10x with AVX-512), and since h is already a strong hash the minima
// behave the same: tests/data/minhash_test.cpp checks the estimate and the LSH S-curve. 32-bit
// values halve the signature file; a chance collision (2^-32) is far below the estimate's noise.
#pragma once
#include <cstdint>
#include <vector>

#include "data/text.h"

namespace sixnd::data {

struct MinHashParams {
    int ngram = 5;
    int bands = 14;
    int rows = 8;
    uint64_t seed = 1;
    int size() const { return bands * rows; }
};

class MinHasher {
public:
    explicit MinHasher(const MinHashParams& p);
    int size() const { return p_.size(); }
    // Writes size() values to sig. A document shorter than ngram words is one shingle (all its
    // words), so short near-duplicates still meet; false (sig untouched) if it has no words.
    bool signature(const NormWords& words, uint32_t* sig) const;

private:
    MinHashParams p_;
    std::vector<uint64_t> a_, b_;
};

// Share of equal positions: an unbiased estimate of the Jaccard similarity of the shingle sets.
double estimated_jaccard(const uint32_t* x, const uint32_t* y, int n);

}  // namespace sixnd::data
