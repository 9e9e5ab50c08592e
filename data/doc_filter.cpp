#include "data/doc_filter.h"

#include <algorithm>
#include <chrono>

#include "data/dedup_exact.h"
#include "data/langid.h"
#include "data/text.h"
#include "tokenizer/pretokenizer.h"

namespace sixnd::data {

const char* stage_name(int stage) {
    static const char* const kNames[] = {"ingest",     "langid",     "quality",       "repetition",
                                         "dedup_exact", "dedup_near", "decontaminate", "kept"};
    return kNames[stage];
}

namespace {

class StageClock {
public:
    explicit StageClock(double* seconds) : seconds_(seconds), last_(std::chrono::steady_clock::now()) {}
    void lap(int stage) {
        auto now = std::chrono::steady_clock::now();
        seconds_[stage] += std::chrono::duration<double>(now - last_).count();
        last_ = now;
    }

private:
    double* seconds_;
    std::chrono::steady_clock::time_point last_;
};

}  // namespace

void filter_document(std::string& text, const FilterConfig& cfg, DocVerdict& v) {
    StageClock clock(v.seconds);
    v.raw_bytes = text.size();
    CleanResult c = clean_text(text, cfg.invalid_utf8);
    v.repaired = c == CleanResult::repaired;
    v.bytes = text.size();
    if (c == CleanResult::dropped) {
        v.fate = kIngest, v.reason = "invalid_utf8";
        return;
    }
    // Nothing but white space, Unicode's included (a no-break or ideographic space is no text either).
    if (white_space_only(text)) {
        v.fate = kIngest, v.reason = "empty";
        return;
    }
    // NUL never occurs in text; a document holding one is a binary file (an index, an image).
    if (text.find('\0') != std::string::npos) {
        v.fate = kIngest, v.reason = "binary";
        return;
    }
    clock.lap(kIngest);
    if (cfg.langid) {
        LangGuess g = detect_language(text);
        v.lang = g.lang;
        clock.lap(kLangid);
        if (std::find(cfg.langs.begin(), cfg.langs.end(), g.lang) == cfg.langs.end()) {
            v.fate = kLangid, v.reason = "language_" + language_code(g.lang);
            return;
        }
        if (g.confidence < cfg.min_lang_confidence) {
            v.fate = kLangid, v.reason = "low_confidence";
            return;
        }
    }
    if (cfg.quality) {
        const char* rule = gopher_quality(text, *cfg.quality);
        clock.lap(kQuality);
        if (rule) {
            v.fate = kQuality, v.reason = rule;
            return;
        }
    }
    if (cfg.repetition) {
        std::string rule = gopher_repetition(text, *cfg.repetition);
        clock.lap(kRepetition);
        if (!rule.empty()) {
            v.fate = kRepetition, v.reason = std::move(rule);
            return;
        }
    }
    static thread_local NormWords words;
    normalize_words(text, words);
    v.hash = exact_hash(words, text);
    clock.lap(kDedupExact);
    if (cfg.minhash) {
        v.signature.resize(cfg.minhash->size());
        v.has_signature = cfg.minhash->signature(words, v.signature.data());
        clock.lap(kDedupNear);
    }
    if (cfg.decontaminator) {
        v.eval_hit = cfg.decontaminator->hit(words);
        clock.lap(kDecontaminate);
    }
}

}  // namespace sixnd::data
