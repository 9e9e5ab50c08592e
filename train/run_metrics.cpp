#include "train/run_metrics.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/log.h"

namespace sixnd {

using nlohmann::json;

const std::vector<std::string>& run_metric_names() {
    static const std::vector<std::string> names = {"final_train_loss", "val_loss", "val_bpb", "tokens_per_s", "mfu", "hfu",
                                                   "peak_memory",      "comm_bytes", "spikes", "wall_clock_s"};
    return names;
}

RunMetrics read_run_metrics(const std::string& log_path) {
    std::ifstream in(log_path);
    if (!in) throw Error(log_path, "cannot open the run log");
    RunMetrics m;
    std::map<int, json> steps;
    std::set<int> spike_steps;
    std::string line;
    for (int n = 1; std::getline(in, line); n++) {
        if (line.empty()) continue;
        json r;
        try {
            r = json::parse(line);
        } catch (const json::exception&) {
            // A run killed mid-write leaves a torn line (and, resumed, appends after it).
            log_warn(log_path + ":" + std::to_string(n) + ": not a JSON record (a torn write?); skipped");
            continue;
        }
        const std::string type = r.value("type", "");
        if (type == "header") m.header = r;
        else if (type == "step") steps[r.at("step").get<int>()] = r;
        else if (type == "event" && r.value("event", "") == "spike") spike_steps.insert(r.value("step", 0));
    }
    if (steps.empty()) throw Error(log_path, "has no step records");
    m.last_step = steps.rbegin()->first;
    for (const auto& [s, r] : steps) m.step_loss[s] = r.at("loss").get<double>();

    json& v = m.values;
    v = json::object();
    v["final_train_loss"] = steps.rbegin()->second.at("loss");
    v["val_loss"] = v["val_bpb"] = nullptr;
    for (const auto& [s, r] : steps) {
        if (r.contains("val_loss")) v["val_loss"] = r["val_loss"];
        if (r.contains("val_bpb")) v["val_bpb"] = r["val_bpb"];
    }
    for (const char* key : {"tokens_per_s", "mfu", "hfu"}) {
        double sum = 0;
        int n = 0;
        for (const auto& [s, r] : steps) {
            if (steps.size() > 1 && s == steps.begin()->first) continue;
            sum += r.value(key, 0.0);
            n++;
        }
        v[key] = sum / n;
    }
    json mem = json::object();
    double comm = 0, wall_ms = 0;
    for (const auto& [s, r] : steps) {
        if (r.contains("memory"))
            for (const auto& [cat, bytes] : r["memory"].items()) {
                if (cat == "total" || !bytes.is_number()) continue;
                mem[cat] = std::max(mem.value(cat, 0.0), bytes.get<double>());
            }
        comm += r.value("comm_bytes", 0.0);
        wall_ms += r.value("step_ms", 0.0);
    }
    v["peak_memory"] = mem;
    v["comm_bytes"] = comm;
    v["spikes"] = spike_steps.size();
    v["wall_clock_s"] = wall_ms / 1e3;
    return m;
}

}  // namespace sixnd
