#include "data/manifest.h"

#include "core/atomic_file.h"

namespace sixnd::data {

nlohmann::json StageCount::to_json() const {
    nlohmann::json j;
    j["stage"] = name;
    j["documents"] = {{"in", docs_in}, {"kept", docs_in - docs_removed}, {"removed", docs_removed}};
    j["bytes"] = {{"in", bytes_in}, {"kept", bytes_in - bytes_removed}, {"removed", bytes_removed}};
    j["removed_by"] = nlohmann::json::object();
    for (const auto& [k, v] : reasons) j["removed_by"][k] = v;
    return j;
}

void write_json(const std::string& path, const nlohmann::json& j) { write_file_atomically(path, j.dump(2) + "\n"); }

}  // namespace sixnd::data
