// `sixnd data prepare`: sources -> ingest -> language ID -> quality -> repetition -> exact dedup
// -> near dedup -> decontamination -> validation split -> mixing -> tokenized llm.c shards and
// manifest.json.
//
// Memory stays bounded for inputs larger than RAM: the first pass streams every document once
// and keeps only a small record and a MinHash signature (on disk) per document; the second pass
// re-reads the inputs and tokenizes the survivors into a scratch token file; the third lays
// those tokens out into shards. Everything is built in a sibling directory of --out that is
// renamed into place at the end, so a failure leaves nothing half-written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/ingest.h"
#include "data/minhash.h"
#include "data/mixing.h"
#include "data/quality_filter.h"
#include "data/repetition_filter.h"

namespace sixnd::data {

struct PrepareOptions {
    std::vector<SourceSpec> sources;
    std::string tokenizer;
    std::string out;
    bool overwrite = false;
    IngestOptions ingest;

    bool langid = true;
    std::string langs = "en";
    double min_lang_confidence = 0.65;
    bool quality = true;
    QualityOptions quality_opts;
    bool repetition = true;
    RepetitionOptions repetition_opts;
    bool dedup_exact = true;
    bool dedup_near = true;
    MinHashParams minhash;
    double minhash_verify = 0.6;
    std::vector<std::string> decontaminate;
    int decontaminate_ngram = 13;

    double val_fraction = 0.005;
    uint64_t shard_tokens = 100'000'000;
    std::string eot = "<|endoftext|>";
    bool shuffle = true;
    uint64_t seed = 1337;
    int threads = 0;  // 0: OpenMP's default

    nlohmann::json config;  // the resolved flags, recorded in the manifest
};

// Runs the whole pipeline; throws Error on bad input, leaving --out untouched.
// Returns the manifest that was written.
nlohmann::json prepare(const PrepareOptions& opts);

}  // namespace sixnd::data
