#include "data/dedup_exact.h"

#include <algorithm>
#include <utility>

namespace sixnd::data {

uint64_t exact_hash(const NormWords& words, std::string_view text) {
    // A normalised text is made of word characters, a wordless one has none: the two never meet.
    return hash_bytes(words.size() ? std::string_view(words.text) : text, 0x5158ED0Bull);
}

std::vector<bool> exact_duplicates(const std::vector<uint64_t>& hashes) {
    std::vector<std::pair<uint64_t, uint32_t>> order(hashes.size());
    for (size_t i = 0; i < hashes.size(); i++) order[i] = {hashes[i], static_cast<uint32_t>(i)};
    std::sort(order.begin(), order.end());
    std::vector<bool> dup(hashes.size(), false);
    for (size_t i = 1; i < order.size(); i++)
        if (order[i].first == order[i - 1].first) dup[order[i].second] = true;
    return dup;
}

}  // namespace sixnd::data
