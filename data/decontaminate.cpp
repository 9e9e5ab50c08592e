#include "data/decontaminate.h"

#include <algorithm>

namespace sixnd::data {

Decontaminator::Decontaminator(const std::vector<std::string>& files, int ngram, const IngestOptions& ingest)
    : files_(files), ngram_(ngram) {
    std::string doc;
    NormWords words;
    for (size_t f = 0; f < files.size(); f++) {
        DocReader reader(files[f], ingest);
        while (reader.next(doc)) {
            if (clean_text(doc, InvalidUtf8::repair) == CleanResult::dropped) continue;
            normalize_words(doc, words);
            if (words.size() < static_cast<size_t>(ngram)) {
                short_passages_ += words.size() > 0;
                continue;
            }
            for (size_t i = 0; i + ngram <= words.size(); i++)
                grams_.emplace_back(hash_bytes(words.span(i, ngram)), static_cast<int>(f));
        }
    }
    // Sorting by (hash, file) and keeping the first of each hash credits a shared n-gram to the
    // earliest file named.
    std::sort(grams_.begin(), grams_.end());
    grams_.erase(std::unique(grams_.begin(), grams_.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                 grams_.end());
}

int Decontaminator::hit(const NormWords& doc) const {
    if (grams_.empty()) return -1;
    for (size_t i = 0; i + ngram_ <= doc.size(); i++) {
        uint64_t h = hash_bytes(doc.span(i, ngram_));
        auto it = std::lower_bound(grams_.begin(), grams_.end(), std::make_pair(h, -1));
        if (it != grams_.end() && it->first == h) return it->second;
    }
    return -1;
}

}  // namespace sixnd::data
