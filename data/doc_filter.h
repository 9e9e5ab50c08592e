// The per-document part of the first pass: cleaning, language ID, the quality and repetition
// rules, and the hashes that deduplication and decontamination work from. Pure function of the
// text and the options, so it runs on any thread and gives the same verdict on a re-run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/decontaminate.h"
#include "data/ingest.h"
#include "data/minhash.h"
#include "data/quality_filter.h"
#include "data/repetition_filter.h"

namespace sixnd::data {

// Stages in pipeline order; a document's fate is the stage that removed it (or kept).
enum Stage : uint8_t { kIngest, kLangid, kQuality, kRepetition, kDedupExact, kDedupNear, kDecontaminate, kKept };
inline constexpr int kFilterStages = kKept;
const char* stage_name(int stage);

struct FilterConfig {
    InvalidUtf8 invalid_utf8 = InvalidUtf8::repair;
    bool langid = true;
    std::vector<int> langs;
    double min_lang_confidence = 0;
    const QualityOptions* quality = nullptr;        // null: stage off
    const RepetitionOptions* repetition = nullptr;  // null: stage off
    const MinHasher* minhash = nullptr;             // null: no signature
    const Decontaminator* decontaminator = nullptr;
};

struct DocVerdict {
    uint8_t fate = kKept;        // kIngest..kRepetition, or kKept when it passed the filters
    std::string reason;          // why it was removed
    bool repaired = false;       // invalid UTF-8 was replaced
    int lang = -1;               // CLD2 language, -1 when language ID did not run
    uint64_t raw_bytes = 0, bytes = 0;
    uint64_t hash = 0;           // exact-dedup hash of the normalised words
    bool has_signature = false;  // signature holds minhash->size() values
    std::vector<uint32_t> signature;
    int eval_hit = -1;           // decontamination: evaluation file index, or -1
    double seconds[kFilterStages] = {};  // thread time spent per stage, for the benchmark
};

// Runs the filters on text (cleaned in place).
void filter_document(std::string& text, const FilterConfig& cfg, DocVerdict& v);

}  // namespace sixnd::data
