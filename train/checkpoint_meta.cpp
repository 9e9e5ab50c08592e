#include "train/checkpoint_meta.h"

#include <xxhash.h>

#include "core/error.h"
#include "core/hex.h"
#include "core/json_fault.h"

namespace sixnd {

using nlohmann::json;

namespace {

std::string checksum_of(const json& j) {
    const std::string canonical = j.dump();
    return hex64(XXH64(canonical.data(), canonical.size(), 0));
}

}  // namespace

std::string CheckpointMeta::to_text() const {
    json files_json = json::object();
    for (const auto& [name, f] : files) files_json[name] = {{"bytes", f.bytes}, {"xxh64", f.xxh64}};
    json j{{"format", "sixnd-checkpoint"},
           {"version", kVersion},
           {"run_id", run_id},
           {"step", step},
           {"applied_steps", applied_steps},
           {"bad_steps", bad_steps},
           {"tokens_seen", tokens_seen},
           {"batch_tokens", batch_tokens},
           {"world_size", world_size},
           {"zero_stage", zero_stage},
           {"unit_align", unit_align},
           {"dtype", dtype},
           {"model", model.to_json()},
           {"config", config},
           {"tokenizer_hash", tokenizer_hash},
           {"data", data},
           {"loader", {{"epoch", loader.epoch}, {"cursor", loader.cursor}}},
           {"files", files_json}};
    j["checksum"] = checksum_of(j);
    return j.dump(2) + "\n";
}

CheckpointMeta CheckpointMeta::parse(const std::string& text, const std::string& where) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(where, "malformed JSON: " + json_fault(e));
    }
    if (!j.is_object() || j.value("format", "") != "sixnd-checkpoint")
        throw Error(where, "not a sixnd checkpoint description (no \"format\": \"sixnd-checkpoint\")");
    if (j.value("version", 0) != kVersion)
        throw Error(where, "checkpoint format version " + j.value("version", json(nullptr)).dump() + ", this sixnd reads version " +
                               std::to_string(kVersion));
    if (!j.contains("checksum") || !j["checksum"].is_string()) throw Error(where, "has no checksum");
    const std::string stored = j["checksum"];
    j.erase("checksum");
    if (checksum_of(j) != stored) throw Error(where, "checksum mismatch: meta.json was edited or is corrupt");
    CheckpointMeta m;
    // Counts are whole numbers in their type's range: nlohmann would truncate 3.5 to 3, wrap
    // 2^40 into an int and -1 into a uint64 (the checksum only says the file is as written).
    const auto whole = [&](const json& v, const std::string& name, double hi) {
        if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<long long>() < 0) ||
            static_cast<double>(v.get<uint64_t>()) > hi)
            throw Error(where, name + " must be a whole number from 0 to " + std::to_string(static_cast<unsigned long long>(hi)) +
                                   ", got " + excerpt(v.dump()));
        return v.get<uint64_t>();
    };
    constexpr double kInt = 2147483647.0, kU64 = 18446744073709551615.0;
    try {
        m.run_id = j.at("run_id");
        m.step = static_cast<int>(whole(j.at("step"), "step", kInt));
        m.applied_steps = static_cast<int>(whole(j.at("applied_steps"), "applied_steps", kInt));
        m.bad_steps = static_cast<int>(whole(j.at("bad_steps"), "bad_steps", kInt));
        m.tokens_seen = whole(j.at("tokens_seen"), "tokens_seen", kU64);
        m.batch_tokens = static_cast<long long>(whole(j.at("batch_tokens"), "batch_tokens", 9223372036854775807.0));
        m.world_size = static_cast<int>(whole(j.at("world_size"), "world_size", kInt));
        m.zero_stage = static_cast<int>(whole(j.at("zero_stage"), "zero_stage", 3));
        m.unit_align = whole(j.at("unit_align"), "unit_align", kU64);
        m.dtype = j.at("dtype");
        m.model = GPTConfig::from_json(j.at("model"), where);
        m.config = j.at("config");
        m.tokenizer_hash = j.at("tokenizer_hash");
        m.data = j.at("data");
        if (!m.config.is_object() || !m.data.is_object()) throw Error(where, "config and data must be objects");
        // What a resume reads from these records with a type (the optimizer's name, the shards
        // data_change compares): another type would end in a JSON error naming no file.
        if (m.config.contains("optimizer") && !m.config["optimizer"].is_string())
            throw Error(where, "config.optimizer must be a string, got " + excerpt(m.config["optimizer"].dump()));
        if (m.data.contains("tokens")) whole(m.data["tokens"], "data.tokens", kU64);
        const json& shards = m.data.contains("shards") ? m.data["shards"] : json::array();
        if (!shards.is_array()) throw Error(where, "data.shards must be a list of shard records, got " + excerpt(shards.dump()));
        for (size_t i = 0; i < shards.size(); i++) {
            const json& sh = shards[i];
            const std::string at = "data.shards[" + std::to_string(i) + "]";
            if (!sh.is_object()) throw Error(where, at + " must be a shard record (an object), got " + excerpt(sh.dump()));
            for (const char* key : {"path", "tokens_xxh3_64"})
                if (sh.contains(key) && !sh[key].is_string())
                    throw Error(where, at + "." + key + " must be a string, got " + excerpt(sh[key].dump()));
            if (sh.contains("tokens")) whole(sh["tokens"], at + ".tokens", kU64);
        }
        m.loader.epoch = whole(j.at("loader").at("epoch"), "loader.epoch", kU64);
        m.loader.cursor = whole(j.at("loader").at("cursor"), "loader.cursor", kU64);
        for (const auto& [name, f] : j.at("files").items()) m.files[name] = FileSum{f.at("bytes"), f.at("xxh64")};
    } catch (const json::exception& e) {
        throw Error(where, "missing or mistyped field: " + json_fault(e));
    }
    m.model.validate(where);
    if (m.step < 0 || m.applied_steps < 0 || m.bad_steps < 0 || m.world_size < 1 || m.zero_stage < 0 ||
        m.zero_stage > 3 || m.unit_align == 0 || (m.dtype != "fp32" && m.dtype != "bf16"))
        throw Error(where, "a field is out of range (step, world_size, zero_stage, unit_align or dtype)");
    // A step makes at most one update and is bad or not: more of either than steps is no run's.
    for (const auto& [name, count] : {std::pair<const char*, int>{"applied_steps", m.applied_steps}, {"bad_steps", m.bad_steps}})
        if (count > m.step)
            throw Error(where, std::string(name) + " " + std::to_string(count) + " is more than step " + std::to_string(m.step));
    for (const auto& [name, f] : m.files)
        if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
            throw Error(where, "file name '" + name + "' is not a plain name inside the checkpoint");
    return m;
}

}  // namespace sixnd
