// Locality-sensitive hashing over MinHash signatures: documents whose signatures agree on all
// rows of any band become candidates, candidates are joined with union-find, and each cluster
// keeps its earliest document. A candidate pair can first be checked against the signature's
// Jaccard estimate (verify_threshold > 0): that removes the S-curve's false positives, which at
// 14 x 8 still merge about 5% of pairs at J = 0.5, at no cost to recall above the threshold.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace sixnd::data {

struct LshParams {
    int bands = 14;
    int rows = 8;
    double verify_threshold = 0;  // 0: every candidate pair is merged, as in FineWeb
};

// sigs holds n signatures of bands*rows values each, in document order; entries whose active
// flag is false (documents already removed) take no part. Returns, for each, the index of its
// cluster's first member (itself when it has no near-duplicate). Deterministic for any thread
// count. band_done, when given, is called with the number of bands finished after each one, so
// that a long search can show progress.
std::vector<uint32_t> lsh_clusters(const uint32_t* sigs, size_t n, const std::vector<bool>& active, const LshParams& p,
                                   const std::function<void(int)>& band_done = {});

}  // namespace sixnd::data
