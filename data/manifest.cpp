#include "data/manifest.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

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

std::string hex64(uint64_t v) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
}

void write_json(const std::string& path, const nlohmann::json& j) {
    std::string tmp = path + ".tmp";
    std::string text = j.dump(2) + "\n";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error(path, std::string("cannot write: ") + std::strerror(errno));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error(path, std::string("write failed: ") + std::strerror(errno));
    }
}

}  // namespace sixnd::data
