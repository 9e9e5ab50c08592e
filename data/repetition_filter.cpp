#include "data/repetition_filter.h"

#include <algorithm>
#include <sstream>
#include <string>
#include <unordered_set>

#include "core/error.h"
#include "data/text.h"

namespace sixnd::data {

std::vector<std::pair<int, double>> parse_ngram_thresholds(const std::string& flag, const std::string& spec) {
    std::vector<std::pair<int, double>> out;
    std::stringstream ss(spec);
    std::string item;
    // An empty list switches the rule off; an empty item inside one is a typo.
    while (!spec.empty() && std::getline(ss, item, ',')) {
        if (item.empty()) throw Error(flag, "empty item in '" + spec + "': expected N:FRACTION,N:FRACTION...");
        size_t colon = item.find(':');
        try {
            // Whole fields only: stoi reads "1e1" as 1 and "2.9" as 2, stod "0.2x" as 0.2.
            size_t n_used = 0, t_used = 0;
            int n = std::stoi(item.substr(0, colon), &n_used);
            double t = colon == std::string::npos ? -1 : std::stod(item.substr(colon + 1), &t_used);
            if (colon == std::string::npos || n_used != colon || t_used != item.size() - colon - 1 || n < 1 || n > 64 ||
                !(t >= 0 && t <= 1))
                throw std::invalid_argument("range");
            out.emplace_back(n, t);
        } catch (const std::exception&) {
            throw Error(flag, "bad item '" + item + "': expected N:FRACTION with N in 1..64, e.g. 2:0.2");
        }
        for (size_t i = 0; i + 1 < out.size(); i++)
            if (out[i].first == out.back().first)
                throw Error(flag, "N = " + std::to_string(out.back().first) + " is given twice in '" + spec + "'");
    }
    if (!spec.empty() && spec.back() == ',') throw Error(flag, "empty item in '" + spec + "': expected N:FRACTION,N:FRACTION...");
    return out;
}

namespace {

// Counts chunks (lines or paragraphs) that repeat an earlier chunk, and their bytes.
struct Dups {
    size_t total = 0, dup = 0, dup_bytes = 0;
};

Dups duplicate_chunks(const std::vector<std::string_view>& chunks) {
    Dups d;
    std::unordered_set<std::string_view> seen;
    seen.reserve(chunks.size() * 2);
    for (auto c : chunks) {
        d.total++;
        if (!seen.insert(c).second) {
            d.dup++;
            d.dup_bytes += c.size();
        }
    }
    return d;
}

// Counts 64-bit n-gram keys in an open-addressing table that each thread reuses: the rules
// count nine n-gram sizes per document, and std::unordered_map's allocations dominated.
class GramCounter {
public:
    void reset(size_t n) {
        size_t cap = 16;
        while (cap < 2 * n) cap *= 2;
        if (keys_.size() < cap) keys_.resize(cap), counts_.resize(cap);
        mask_ = cap - 1;
        std::fill(keys_.begin(), keys_.begin() + cap, 0);
        std::fill(counts_.begin(), counts_.begin() + cap, 0);
    }
    uint32_t& operator[](uint64_t key) {
        key = key ? key : 1;  // 0 marks an empty slot; merging key 0 with 1 costs nothing measurable
        size_t i = key & mask_;
        while (keys_[i] != key && keys_[i] != 0) i = (i + 1) & mask_;
        keys_[i] = key;
        return counts_[i];
    }

private:
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> counts_;
    size_t mask_ = 0;
};

std::string_view trim(std::string_view s) {
    size_t b = s.find_first_not_of(" \t\r\f\v\n");
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(" \t\r\f\v\n");
    return s.substr(b, e - b + 1);
}

}  // namespace

std::string gopher_repetition(std::string_view text, const RepetitionOptions& o) {
    // Paragraphs are runs of non-blank lines; a line holding only whitespace ends one.
    std::vector<std::string_view> lines, paras;
    size_t para_begin = std::string_view::npos, para_end = 0;
    for (size_t b = 0; b <= text.size();) {
        size_t e = std::min(text.find('\n', b), text.size());
        auto line = trim(text.substr(b, e - b));
        if (!line.empty()) {
            lines.push_back(line);
            if (para_begin == std::string_view::npos) para_begin = static_cast<size_t>(line.data() - text.data());
            para_end = static_cast<size_t>(line.data() - text.data()) + line.size();
        } else if (para_begin != std::string_view::npos) {
            paras.push_back(text.substr(para_begin, para_end - para_begin));
            para_begin = std::string_view::npos;
        }
        b = e + 1;
    }
    if (para_begin != std::string_view::npos) paras.push_back(text.substr(para_begin, para_end - para_begin));
    double total = std::max<double>(1, static_cast<double>(text.size()));
    Dups ld = duplicate_chunks(lines), pd = duplicate_chunks(paras);
    if (ld.total && static_cast<double>(ld.dup) / static_cast<double>(ld.total) > o.max_dup_line_frac) return "dup_line_frac";
    if (pd.total && static_cast<double>(pd.dup) / static_cast<double>(pd.total) > o.max_dup_para_frac) return "dup_para_frac";
    if (static_cast<double>(ld.dup_bytes) / total > o.max_dup_line_char_frac) return "dup_line_char_frac";
    if (static_cast<double>(pd.dup_bytes) / total > o.max_dup_para_char_frac) return "dup_para_char_frac";

    std::vector<std::string_view> words;
    size_t word_bytes = 0;
    for (size_t i = 0; i < text.size();) {
        size_t b = text.find_first_not_of(" \t\r\n\f\v", i);
        if (b == std::string_view::npos) break;
        size_t e = std::min(text.find_first_of(" \t\r\n\f\v", b), text.size());
        words.push_back(text.substr(b, e - b));
        word_bytes += e - b;
        i = e;
    }
    if (word_bytes == 0) return {};
    // Each n-gram is keyed by the hashes of its words, so nothing is copied.
    std::vector<uint64_t> wh(words.size());
    for (size_t i = 0; i < words.size(); i++) wh[i] = hash_bytes(words[i]);
    auto gram_key = [&](size_t i, int n) {
        uint64_t h = static_cast<uint64_t>(n);
        for (int k = 0; k < n; k++) h = (h ^ wh[i + k]) * 0x9E3779B97F4A7C15ull + (h >> 29);
        return h;
    };
    auto gram_bytes = [&](size_t i, int n) {
        size_t s = 0;
        for (int k = 0; k < n; k++) s += words[i + k].size();
        return s;
    };
    static thread_local GramCounter counts;
    for (const auto& [n, limit] : o.top_ngram) {
        if (words.size() < static_cast<size_t>(n)) continue;
        counts.reset(words.size());
        size_t best_i = 0;
        uint32_t best = 0;
        for (size_t i = 0; i + n <= words.size(); i++) {
            uint32_t c = ++counts[gram_key(i, n)];
            if (c > best) best = c, best_i = i;
        }
        if (best > 1 && static_cast<double>(best * gram_bytes(best_i, n)) / static_cast<double>(word_bytes) > limit)
            return "top_" + std::to_string(n) + "gram_char_frac";
    }
    std::vector<char> covered;
    for (const auto& [n, limit] : o.dup_ngram) {
        if (words.size() < static_cast<size_t>(n)) continue;
        counts.reset(words.size());
        std::vector<uint64_t> keys(words.size() - n + 1);
        for (size_t i = 0; i < keys.size(); i++) counts[keys[i] = gram_key(i, n)]++;
        covered.assign(words.size(), 0);
        for (size_t i = 0; i < keys.size(); i++)
            if (counts[keys[i]] > 1) std::fill(covered.begin() + i, covered.begin() + i + n, 1);
        size_t dup_bytes = 0;
        for (size_t i = 0; i < words.size(); i++) dup_bytes += covered[i] ? words[i].size() : 0;
        if (static_cast<double>(dup_bytes) / static_cast<double>(word_bytes) > limit)
            return "dup_" + std::to_string(n) + "gram_char_frac";
    }
    return {};
}

}  // namespace sixnd::data
