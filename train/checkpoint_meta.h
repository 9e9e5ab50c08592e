// A checkpoint's meta.json, as one struct: every field a checkpoint records is here, and this
// is the only code that writes or reads the file. The file ends with "checksum", the xxh64 of
// the canonical JSON text of everything else, so that an edited or bit-flipped meta.json (a
// changed step, a changed file size) is refused by name instead of loaded.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "data/loader.h"
#include "model/config.h"

namespace sixnd {

struct FileSum {
    uint64_t bytes = 0;
    std::string xxh64;  // 16 hex digits
};

struct CheckpointMeta {
    static constexpr int kVersion = 2;

    std::string run_id;  // the run lineage: drawn by a fresh run, kept by every resume of it
    int step = 0;
    int applied_steps = 0;  // optimizer updates made (non-finite steps are skipped)
    int bad_steps = 0;      // non-finite steps in a row at the time of saving
    uint64_t tokens_seen = 0;
    long long batch_tokens = 0;  // tokens per optimizer step
    int world_size = 1;
    int zero_stage = 0;
    size_t unit_align = 64;  // elements; the parameter layout params.bin is in
    std::string dtype;       // storage dtype name: fp32 or bf16
    GPTConfig model;
    nlohmann::json config;  // the resolved training options
    std::string tokenizer_hash;
    nlohmann::json data;  // the training data: pattern, tokens, shards, hash
    LoaderState loader;
    std::map<std::string, FileSum> files;  // every other file of the checkpoint

    // The file's text, checksum included.
    std::string to_text() const;
    // Parses and verifies the text; throws Error(where, ...) naming the fault.
    static CheckpointMeta parse(const std::string& text, const std::string& where);
};

}  // namespace sixnd
