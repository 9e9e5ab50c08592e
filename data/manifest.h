// manifest.json: what went in (files with hashes), what every stage removed and why, and what
// came out (shards with token counts), so a run can be audited and its data identified.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace sixnd::data {

// One stage's ledger: documents and bytes in = kept + removed, removals broken down by reason.
struct StageCount {
    std::string name;
    uint64_t docs_in = 0, docs_removed = 0, bytes_in = 0, bytes_removed = 0;
    std::map<std::string, uint64_t> reasons;

    void pass(uint64_t bytes) {
        docs_in++;
        bytes_in += bytes;
    }
    void remove(uint64_t bytes, const std::string& reason) {
        pass(bytes);
        docs_removed++;
        bytes_removed += bytes;
        reasons[reason]++;
    }
    nlohmann::json to_json() const;
};


// Writes the JSON (pretty-printed) atomically: temporary name, then rename.
void write_json(const std::string& path, const nlohmann::json& j);

}  // namespace sixnd::data
