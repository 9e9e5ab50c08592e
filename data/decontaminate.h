// Decontamination: a training document sharing any word n-gram (13 by default, as in GPT-3)
// of normalised words with an evaluation passage is dropped, and the evaluation file it hit is
// recorded. Evaluation files are read like sources (text, fortune or JSONL, maybe gzip'd).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/ingest.h"
#include "data/text.h"

namespace sixnd::data {

class Decontaminator {
public:
    Decontaminator(const std::vector<std::string>& files, int ngram, const IngestOptions& ingest);

    // Index (into files()) of the first evaluation file the document shares an n-gram with; -1 if none.
    int hit(const NormWords& doc) const;

    const std::vector<std::string>& files() const { return files_; }
    size_t ngram_count() const { return grams_.size(); }
    // Evaluation passages shorter than n words: they cannot be matched, and are reported.
    size_t short_passages() const { return short_passages_; }

private:
    std::vector<std::string> files_;
    int ngram_;
    std::vector<std::pair<uint64_t, int>> grams_;  // sorted by hash, one entry per hash
    size_t short_passages_ = 0;
};

}  // namespace sixnd::data
