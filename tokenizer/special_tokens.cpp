#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <cstring>

namespace sixnd {

SpecialTokens::SpecialTokens(std::vector<std::pair<std::string, uint32_t>> tokens) : tokens_(std::move(tokens)) {
    std::stable_sort(tokens_.begin(), tokens_.end(),
                     [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    for (const auto& t : tokens_) {
        if (t.first.empty()) continue;
        unsigned char f = static_cast<unsigned char>(t.first[0]);
        if (!first_[f]) single_first_ = single_first_ == -1 ? f : -2;
        first_[f] = true;
        max_len_ = std::max(max_len_, t.first.size());
    }
}

std::optional<SpecialTokens::Match> SpecialTokens::find(std::string_view text, size_t from) const {
    if (max_len_ == 0) return std::nullopt;
    const size_t n = text.size();
    for (size_t i = from; i < n; i++) {
        if (single_first_ >= 0) {
            const void* p = std::memchr(text.data() + i, single_first_, n - i);
            if (!p) return std::nullopt;
            i = static_cast<size_t>(static_cast<const char*>(p) - text.data());
        } else if (!first_[static_cast<unsigned char>(text[i])]) {
            continue;
        }
        for (const auto& t : tokens_)
            if (!t.first.empty() && text.compare(i, t.first.size(), t.first) == 0)
                return Match{i, t.first.size(), t.second};
    }
    return std::nullopt;
}

std::vector<SpecialTokens::Match> SpecialTokens::find_all(std::string_view text) const {
    std::vector<Match> all;
    size_t from = 0;
    while (auto m = find(text, from)) {
        all.push_back(*m);
        from = m->pos + m->len;
    }
    return all;
}

}  // namespace sixnd
