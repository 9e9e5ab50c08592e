// Reading a run log (JSON Lines) back in the C++ tests: the event records of one kind.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sixnd::test {

inline std::vector<nlohmann::json> log_events(const std::string& log, const std::string& name) {
    std::vector<nlohmann::json> out;
    std::ifstream f(log);
    for (std::string line; std::getline(f, line);) {
        nlohmann::json r = nlohmann::json::parse(line);
        if (r.value("type", "") == "event" && r.value("event", "") == name) out.push_back(r);
    }
    return out;
}

}  // namespace sixnd::test
