// A complete checkpoint of lineage `run_id` at `step` holding one dummy file, for tests of what
// lists, prunes and resumes checkpoints by name and lineage rather than by their contents.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "train/checkpoint.h"

namespace sixnd::test {

inline std::string save_stub_checkpoint(const std::string& root, int step, const std::string& run_id = "0123456789abcdef") {
    CheckpointWriter w(root, step, true);
    w.add_file("params.bin", "x", 1);
    CheckpointMeta m;
    m.run_id = run_id;
    m.step = step;
    m.dtype = "fp32";
    m.model = preset_config("tiny", 256);
    m.config = nlohmann::json::object();
    m.data = nlohmann::json::object();
    return w.commit(m);
}

}  // namespace sixnd::test
