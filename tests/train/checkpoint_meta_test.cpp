// A checkpoint's meta.json whose checksum is right but whose model record is not (a faulty
// writer, or an edit with the checksum recomputed): each fault is refused with the file named
// and the field, before any size reaches an allocation.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/hex.h"
#include "train/checkpoint_meta.h"

using namespace sixnd;
using nlohmann::json;

namespace {

const char* kWhere = "run/checkpoints/step-00000001/meta.json";

CheckpointMeta good_meta() {
    CheckpointMeta m;
    m.run_id = "0123456789abcdef";
    m.step = 1;
    m.applied_steps = 1;
    m.dtype = "fp32";
    m.model = preset_config("tiny", 256);
    m.config = json::object();
    m.data = json::object();
    return m;
}

// meta.json's text with the field at `path` (a JSON pointer) set to value, its checksum made right again.
std::string with_field(const std::string& path, const json& value) {
    json j = json::parse(good_meta().to_text());
    j.erase("checksum");
    j[json::json_pointer(path)] = value;
    const std::string canonical = j.dump();
    j["checksum"] = hex64(XXH64(canonical.data(), canonical.size(), 0));
    return j.dump(2);
}

std::string with_model_field(const std::string& key, const json& value) { return with_field("/model/" + key, value); }

std::string error_of(const std::string& text) {
    try {
        CheckpointMeta::parse(text, kWhere);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(CheckpointMeta, ModelRecordRoundTrips) {
    const CheckpointMeta m = CheckpointMeta::parse(good_meta().to_text(), kWhere);
    EXPECT_EQ(m.model.describe(), preset_config("tiny", 256).describe());
    EXPECT_EQ(error_of(with_model_field("n_layer", 3)), "");
}

TEST(CheckpointMeta, ModelSizesOutsideIntAreRefusedNotWrapped) {
    for (const char* key : {"max_seq_len", "n_layer", "vocab_size"}) {
        const std::string e = error_of(with_model_field(key, 1000000000000LL));
        EXPECT_NE(e.find(kWhere), std::string::npos) << e;
        EXPECT_NE(e.find(std::string("model.") + key), std::string::npos) << e;
        EXPECT_NE(e.find("1000000000000"), std::string::npos) << e;
    }
    EXPECT_NE(error_of(with_model_field("n_embd", 1.5)).find("model.n_embd"), std::string::npos);
}

TEST(CheckpointMeta, ModelSizesBeyondTheBoundsAreRefused) {
    const std::string e = error_of(with_model_field("n_layer", 100000000));
    EXPECT_NE(e.find(kWhere), std::string::npos) << e;
    EXPECT_NE(e.find("beyond any real model"), std::string::npos) << e;
    EXPECT_NE(e.find("n_layer=100000000"), std::string::npos) << e;
    EXPECT_NE(error_of(with_model_field("max_seq_len", kMaxContext + 1)).find("beyond any real model"), std::string::npos);
}

TEST(CheckpointMeta, UnknownKnobValuesNameTheFileNotAFlag) {
    const std::string e = error_of(with_model_field("mlp", "weird"));
    EXPECT_EQ(e.find(kWhere), 0u) << e;
    EXPECT_NE(e.find("model.mlp: unknown MLP 'weird'"), std::string::npos) << e;
    EXPECT_EQ(e.find("--mlp"), std::string::npos) << e;
    EXPECT_NE(error_of(with_model_field("norm", "batchnorm")).find("model.norm"), std::string::npos);
}

// The run's counters and the loader's position, likewise: whole numbers in their type's range,
// named with the file, never truncated (3.5 -> 3), wrapped (2^40 -> 0, -1 -> 2^64-1) or, for a
// null config or data record, a bare JSON error naming nothing.
TEST(CheckpointMeta, CountersOutsideTheirRangeAreRefusedNotWrapped) {
    const std::vector<std::pair<std::string, json>> bad = {
        {"/step", 3.5}, {"/step", 1099511627776LL}, {"/step", -1}, {"/tokens_seen", -1}, {"/world_size", 1LL << 40},
        {"/zero_stage", 4}, {"/loader/cursor", -1}, {"/loader/epoch", -1}, {"/batch_tokens", "64"}};
    for (const auto& [path, value] : bad) {
        const std::string e = error_of(with_field(path, value));
        std::string name = path.substr(1);
        std::replace(name.begin(), name.end(), '/', '.');
        EXPECT_EQ(e.find(kWhere), 0u) << path << ": " << e;
        EXPECT_NE(e.find(name + " must be a whole number"), std::string::npos) << path << ": " << e;
    }
    for (const char* path : {"/config", "/data"}) {
        const std::string e = error_of(with_field(path, nullptr));
        EXPECT_NE(e.find(std::string(kWhere) + ": config and data must be objects"), std::string::npos) << e;
    }
    EXPECT_EQ(error_of(with_field("/tokens_seen", 18446744073709551615ULL)), "");
}

TEST(CheckpointMeta, MalformedJsonNamesThePlaceNotTheParsersException) {
    EXPECT_EQ(error_of("{\"step\": 1,"), std::string(kWhere) +
              ": malformed JSON: line 1, column 12: syntax error while parsing object key - unexpected end of input; "
              "expected string literal");
    EXPECT_EQ(error_of(with_field("/loader", json::object())),
              std::string(kWhere) + ": missing or mistyped field: key 'epoch' not found");
}

// A run cannot have made more updates, or had more bad steps in a row, than it has steps: a
// checkpoint that says so (at INT_MAX, the next update overflowed the count) is refused.
TEST(CheckpointMeta, UpdatesAndBadStepsCannotOutnumberTheSteps) {
    for (const char* path : {"/applied_steps", "/bad_steps"}) {
        const std::string e = error_of(with_field(path, 2));
        EXPECT_EQ(e.find(kWhere), 0u) << path << ": " << e;
        EXPECT_NE(e.find(std::string(path + 1) + " 2 is more than step 1"), std::string::npos) << path << ": " << e;
    }
    EXPECT_EQ(error_of(with_field("/bad_steps", 1)), "");
}

// The parts of the config and data records that a resume reads with a type (the optimizer's
// name, each shard's token count and content hash) are held to it here, so that another type is
// an error naming the file and the field, not a bare JSON exception from the comparison.
TEST(CheckpointMeta, ConfigAndDataFieldsReadWithATypeAreChecked) {
    const std::vector<std::tuple<std::string, json, std::string>> bad = {
        {"/config", {{"optimizer", 5}}, "config.optimizer must be a string"},
        {"/data", {{"tokens", -1}}, "data.tokens must be a whole number"},
        {"/data", {{"shards", 5}}, "data.shards must be a list of shard records"},
        {"/data", {{"shards", {5}}}, "data.shards[0] must be a shard record"},
        {"/data", {{"shards", {{{"path", 1}}}}}, "data.shards[0].path must be a string"},
        {"/data", {{"shards", {{{"tokens", "5"}}}}}, "data.shards[0].tokens must be a whole number"},
        {"/data", {{"shards", {{{"tokens", 5}, {"tokens_xxh3_64", 7}}}}}, "data.shards[0].tokens_xxh3_64 must be a string"}};
    for (const auto& [path, value, fault] : bad) {
        const std::string e = error_of(with_field(path, value));
        EXPECT_EQ(e.find(kWhere), 0u) << value << ": " << e;
        EXPECT_NE(e.find(fault), std::string::npos) << value << ": " << e;
    }
    EXPECT_EQ(error_of(with_field("/data", {{"shards", {{{"path", "a.bin"}, {"tokens", 5}}}}})), "");
}
