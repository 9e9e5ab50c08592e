// Reading a run log (JSON Lines) back in the C++ tests: the event records of one kind, the step
// records.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sixnd::test {

inline std::vector<nlohmann::json> log_records(const std::string& log, const std::string& type,
                                               const std::string& event = "") {
    std::vector<nlohmann::json> out;
    std::ifstream f(log);
    for (std::string line; std::getline(f, line);) {
        nlohmann::json r = nlohmann::json::parse(line);
        if (r.value("type", "") == type && (event.empty() || r.value("event", "") == event)) out.push_back(r);
    }
    return out;
}

inline std::vector<nlohmann::json> log_events(const std::string& log, const std::string& name) {
    return log_records(log, "event", name);
}

inline std::vector<nlohmann::json> log_steps(const std::string& log) { return log_records(log, "step"); }

}  // namespace sixnd::test
