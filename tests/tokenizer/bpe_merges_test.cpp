// Applying merges: the short (rescan) and long (heap) paths both equal a plain reference
// implementation of "merge the lowest-ranked pair, leftmost first".
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "tests/tokenizer/fixtures.h"
#include "tokenizer/bpe_merges.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

std::vector<uint32_t> reference(const bpe::MergeTable& merges, std::vector<uint32_t> ids) {
    for (;;) {
        size_t best = ids.size();
        uint32_t best_rank = ~0u;
        for (size_t i = 0; i + 1 < ids.size(); i++) {
            const bpe::Merge* m = merges.find(ids[i], ids[i + 1]);
            if (m && m->rank < best_rank) best_rank = m->rank, best = i;
        }
        if (best == ids.size()) return ids;
        ids[best] = merges.find(ids[best], ids[best + 1])->id;
        ids.erase(ids.begin() + static_cast<long>(best) + 1);
    }
}

}  // namespace

TEST(BpeMerges, ShortAndLongPathsEqualReference) {
    SIXND_NEED_FIXTURES();
    const TokenizerSpec& spec = gpt2_tokenizer()->spec();
    bpe::MergeTable merges(spec.merges.size());
    std::vector<uint32_t> byte_id(256);
    std::unordered_map<std::string, uint32_t> id_of;
    for (uint32_t id = 0; id < spec.tokens.size(); id++) {
        id_of[spec.tokens[id]] = id;
        if (spec.tokens[id].size() == 1) byte_id[static_cast<unsigned char>(spec.tokens[id][0])] = id;
    }
    for (uint32_t r = 0; r < spec.merges.size(); r++) {
        auto [a, b] = spec.merges[r];
        merges.add(a, b, {r, id_of.at(spec.tokens[a] + spec.tokens[b])});
    }
    std::mt19937_64 rng(5);
    const std::string alphabet = " etaoinshrdlucmTHE";
    for (size_t n : {2, 3, 17, 255, 256, 257, 300, 1000, 2500}) {
        for (int rep = 0; rep < 3; rep++) {
            std::vector<uint32_t> ids(n);
            for (auto& id : ids) id = byte_id[static_cast<unsigned char>(alphabet[rng() % alphabet.size()])];
            if (rep == 2) std::fill(ids.begin(), ids.end(), byte_id[' ']);
            std::vector<uint32_t> got = ids;
            bpe::apply_merges(merges, got);
            ASSERT_EQ(got, reference(merges, ids)) << "n=" << n << " rep=" << rep;
        }
    }
}
