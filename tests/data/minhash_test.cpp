// Near-duplicate detection on a generated corpus with planted pairs whose true Jaccard
// similarity (of word 5-gram shingle sets) is measured exactly: recall at J >= 0.9 and false
// merges at J <= 0.5, with and without the signature check, against the LSH S-curve.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "data/dedup_exact.h"
#include "data/lsh.h"
#include "data/minhash.h"
#include "data/text.h"

using namespace sixnd::data;

namespace {

std::string random_word(std::mt19937_64& rng) {
    std::string w;
    for (int i = 0; i < 7; i++) w += static_cast<char>('a' + rng() % 26);
    return w;
}

std::string join(const std::vector<std::string>& w) {
    std::string s;
    for (size_t i = 0; i < w.size(); i++) s += (i ? " " : "") + w[i];
    return s;
}

double true_jaccard(const std::string& a, const std::string& b, int n) {
    NormWords x, y;
    normalize_words(a, x);
    normalize_words(b, y);
    std::set<std::string_view> sa, sb;
    for (size_t i = 0; i + n <= x.size(); i++) sa.insert(x.span(i, n));
    for (size_t i = 0; i + n <= y.size(); i++) sb.insert(y.span(i, n));
    size_t inter = 0;
    for (auto s : sa) inter += sb.count(s);
    return static_cast<double>(inter) / static_cast<double>(sa.size() + sb.size() - inter);
}

struct Pair {
    double jaccard;
    uint32_t base, variant;  // document indices
};

// Base documents of 200 random words, each with one variant in which `edits` words are replaced.
struct PlantedCorpus {
    std::vector<std::string> docs;
    std::vector<Pair> pairs;

    explicit PlantedCorpus(uint64_t seed) {
        std::mt19937_64 rng(seed);
        // Edits per variant: 1-2 give J >= 0.9, 15-40 give J <= 0.5, the rest trace the S-curve.
        std::vector<int> edits;
        for (int i = 0; i < 150; i++) edits.push_back(1 + i % 2);
        for (int i = 0; i < 300; i++) edits.push_back(15 + i % 26);
        for (int i = 0; i < 150; i++) edits.push_back(3 + i % 12);
        for (int e : edits) {
            std::vector<std::string> w;
            for (int i = 0; i < 200; i++) w.push_back(random_word(rng));
            std::vector<std::string> v = w;
            std::vector<int> pos(200);
            for (int i = 0; i < 200; i++) pos[i] = i;
            std::shuffle(pos.begin(), pos.end(), rng);
            for (int i = 0; i < e; i++) v[pos[i]] = random_word(rng);
            docs.push_back(join(w));
            docs.push_back(join(v));
            uint32_t b = static_cast<uint32_t>(docs.size() - 2);
            pairs.push_back({true_jaccard(docs[b], docs[b + 1], 5), b, b + 1});
        }
    }
};

std::vector<uint32_t> cluster(const std::vector<std::string>& docs, const MinHashParams& mp, double verify) {
    MinHasher h(mp);
    std::vector<uint32_t> sigs(docs.size() * mp.size());
    NormWords w;
    for (size_t i = 0; i < docs.size(); i++) {
        normalize_words(docs[i], w);
        EXPECT_TRUE(h.signature(w, sigs.data() + i * mp.size()));
    }
    return lsh_clusters(sigs.data(), docs.size(), std::vector<bool>(docs.size(), true), {mp.bands, mp.rows, verify});
}

struct Rates {
    size_t high = 0, high_merged = 0, low = 0, low_merged = 0;
};

Rates rates(const PlantedCorpus& c, const std::vector<uint32_t>& rep) {
    Rates r;
    for (const auto& p : c.pairs) {
        bool merged = rep[p.variant] == p.base;
        if (p.jaccard >= 0.9) r.high++, r.high_merged += merged;
        if (p.jaccard <= 0.5) r.low++, r.low_merged += merged;
    }
    return r;
}

}  // namespace

TEST(MinHash, PlantedClustersWithVerification) {
    PlantedCorpus c(7);
    auto rep = cluster(c.docs, MinHashParams{}, 0.6);
    Rates r = rates(c, rep);
    ASSERT_GE(r.high, 100u);
    ASSERT_GE(r.low, 200u);
    EXPECT_GE(static_cast<double>(r.high_merged) / r.high, 0.95) << r.high_merged << " of " << r.high;
    EXPECT_LE(static_cast<double>(r.low_merged) / r.low, 0.01) << r.low_merged << " of " << r.low;
    // Unrelated documents never meet: every base document is its own cluster's first member.
    for (const auto& p : c.pairs) EXPECT_EQ(rep[p.base], p.base);
}

// Without the check (FineWeb's way) the measured merge rate follows 1 - (1 - J^r)^b.
TEST(MinHash, MergeRateFollowsTheSCurve) {
    PlantedCorpus c(11);
    MinHashParams mp;
    auto rep = cluster(c.docs, mp, 0);
    // Bins of true J; each bin's merge count must lie within 4 sigma (+1) of the S-curve's.
    const double edges[] = {0.0, 0.4, 0.55, 0.65, 0.75, 0.85, 1.01};
    for (int b = 0; b + 1 < 7; b++) {
        double expected = 0, var = 0;
        size_t merged = 0, n = 0;
        for (const auto& p : c.pairs) {
            if (p.jaccard < edges[b] || p.jaccard >= edges[b + 1]) continue;
            double q = 1 - std::pow(1 - std::pow(p.jaccard, mp.rows), mp.bands);
            expected += q, var += q * (1 - q), n++;
            merged += rep[p.variant] == p.base;
        }
        if (n == 0) continue;
        EXPECT_LE(std::fabs(merged - expected), 4 * std::sqrt(var) + 1)
            << "J in [" << edges[b] << ", " << edges[b + 1] << "): " << merged << " merged of " << n << ", S-curve expects "
            << expected;
    }
    Rates r = rates(c, rep);
    EXPECT_GE(static_cast<double>(r.high_merged) / r.high, 0.95);
}

TEST(MinHash, EstimateTracksJaccard) {
    PlantedCorpus c(3);
    MinHashParams mp;
    MinHasher h(mp);
    std::vector<uint32_t> a(mp.size()), b(mp.size());
    NormWords w;
    double sq = 0;
    for (const auto& p : c.pairs) {
        normalize_words(c.docs[p.base], w);
        h.signature(w, a.data());
        normalize_words(c.docs[p.variant], w);
        h.signature(w, b.data());
        double d = estimated_jaccard(a.data(), b.data(), mp.size()) - p.jaccard;
        sq += d * d;
    }
    // The estimate's standard error is at most 0.5 / sqrt(112) = 0.047.
    EXPECT_LT(std::sqrt(sq / c.pairs.size()), 0.05);
}

TEST(MinHash, ShortDocumentsAndEmptyOnes) {
    MinHasher h(MinHashParams{});
    std::vector<uint32_t> a(112), b(112);
    NormWords w;
    normalize_words("Nobody expects the Spanish", w);
    ASSERT_TRUE(h.signature(w, a.data()));
    normalize_words("nobody EXPECTS the spanish!", w);
    ASSERT_TRUE(h.signature(w, b.data()));
    EXPECT_EQ(a, b);
    normalize_words(" ... ", w);
    EXPECT_FALSE(h.signature(w, a.data()));
}

TEST(MinHash, InactiveDocumentsTakeNoPart) {
    std::vector<std::string> docs = {"a b c d e f g h", "a b c d e f g h", "a b c d e f g h"};
    MinHashParams mp;
    MinHasher h(mp);
    std::vector<uint32_t> sigs(3 * mp.size());
    NormWords w;
    for (int i = 0; i < 3; i++) normalize_words(docs[i], w), h.signature(w, sigs.data() + i * mp.size());
    auto rep = lsh_clusters(sigs.data(), 3, {false, true, true}, {mp.bands, mp.rows, 0.6});
    EXPECT_EQ(rep[1], 1u);
    EXPECT_EQ(rep[2], 1u);
}

// The pipeline's progress line hangs on this: one call per band, in order, the last at all bands.
TEST(MinHash, SearchReportsEachBand) {
    MinHashParams mp;
    MinHasher h(mp);
    std::vector<uint32_t> sigs(2 * mp.size());
    NormWords w;
    normalize_words("a b c d e f g h", w);
    h.signature(w, sigs.data());
    h.signature(w, sigs.data() + mp.size());
    std::vector<int> seen;
    lsh_clusters(sigs.data(), 2, {true, true}, {mp.bands, mp.rows, 0}, [&](int b) { seen.push_back(b); });
    ASSERT_EQ(seen.size(), static_cast<size_t>(mp.bands));
    for (int b = 0; b < mp.bands; b++) EXPECT_EQ(seen[b], b + 1);
}

TEST(ExactDedup, NormalisedCopiesAreDuplicates) {
    std::vector<std::string> docs = {"The cat sat.", "the  CAT sat", "The cat sat on the mat.", "The cat, sat!"};
    std::vector<uint64_t> hashes;
    NormWords w;
    for (const auto& d : docs) normalize_words(d, w), hashes.push_back(exact_hash(w, d));
    auto dup = exact_duplicates(hashes);
    EXPECT_EQ(dup, (std::vector<bool>{false, true, false, true}));
}

// Documents without a word all normalise to "": they were all taken for copies of the first.
TEST(ExactDedup, WordlessDocumentsAreCopiesOnlyOfThemselves) {
    std::vector<std::string> docs = {"#### ====", "**** ++++", "<<>> ~~", "**** ++++", "hello world"};
    std::vector<uint64_t> hashes;
    NormWords w;
    for (const auto& d : docs) normalize_words(d, w), hashes.push_back(exact_hash(w, d));
    auto dup = exact_duplicates(hashes);
    EXPECT_EQ(dup, (std::vector<bool>{false, false, false, true, false}));
}

TEST(NormWords, UnicodeLowercaseAndSpans) {
    NormWords w;
    normalize_words("Ärger, über  ÉTÉ -- 42x", w);
    EXPECT_EQ(w.text, "ärger über été 42x");
    ASSERT_EQ(w.size(), 4u);
    EXPECT_EQ(w.span(1, 2), "über été");
}
