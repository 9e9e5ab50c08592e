// The ablation table: per variant, how many seeds diverged (train/run_metrics.h says when), and
// mean and sample std over seeds of every run metric (over the seeds that have it: "n"); against
// the base, when every seed of both has a final validation
// loss, the difference of their means and Welch's two-sided p-value; for
// speed-only knobs, whether every step's train loss and the final validation loss equal the
// base's run with the same seed (relative difference <= loss_tol).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "core/error.h"
#include "train/ablate.h"
#include "train/run_metrics.h"
#include "train/stats.h"

namespace sixnd {

using nlohmann::json;

namespace {

json mean_std(const std::vector<double>& x) {
    if (x.empty()) return json{{"mean", nullptr}, {"std", nullptr}, {"n", 0}};
    return json{{"mean", mean(x)}, {"std", x.size() > 1 ? json(sample_std(x)) : json(nullptr)}, {"n", x.size()}};
}

std::vector<double> numbers(const std::vector<json>& runs, const std::string& key, const std::string& sub = "") {
    std::vector<double> x;
    for (const json& r : runs) {
        const json* v = &r.at(key);
        if (!sub.empty()) v = v->contains(sub) ? &v->at(sub) : nullptr;
        if (v && v->is_number()) x.push_back(v->get<double>());
    }
    return x;
}

double rel_diff(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

// Largest relative difference of the step losses and final validation loss, over seeds; +inf
// when the runs did not log the same steps.
double max_loss_diff(const std::vector<RunMetrics>& v, const std::vector<RunMetrics>& base) {
    double worst = 0;
    for (size_t s = 0; s < v.size() && s < base.size(); s++) {
        if (v[s].step_loss.size() != base[s].step_loss.size()) return INFINITY;
        for (const auto& [step, loss] : base[s].step_loss) {
            auto it = v[s].step_loss.find(step);
            if (it == v[s].step_loss.end()) return INFINITY;
            worst = std::max(worst, rel_diff(it->second, loss));
        }
        const json &a = v[s].values["val_loss"], &b = base[s].values["val_loss"];
        if (a.is_number() != b.is_number()) return INFINITY;
        if (a.is_number()) worst = std::max(worst, rel_diff(a.get<double>(), b.get<double>()));
    }
    return worst;
}

std::string run_path(const AblationVariant& v, uint64_t seed) { return "runs/" + v.dir + "/seed-" + std::to_string(seed); }

}  // namespace

json ablation_results(const AblationSpec& spec) {
    const std::vector<AblationVariant> variants = ablation_variants(spec.knobs);
    std::vector<uint64_t> seeds;
    for (int i = 0; i < spec.seeds; i++) seeds.push_back(spec.base_seed + static_cast<uint64_t>(i));
    std::vector<std::vector<RunMetrics>> metrics(variants.size());
    json out_variants = json::array();
    std::set<std::string> categories;
    for (size_t vi = 0; vi < variants.size(); vi++)
        for (uint64_t seed : seeds) {
            metrics[vi].push_back(read_run_metrics(spec.out + "/" + run_path(variants[vi], seed) + "/run.jsonl"));
            for (const auto& [cat, b] : metrics[vi].back().values["peak_memory"].items()) categories.insert(cat);
        }
    std::vector<double> base_val;
    for (const RunMetrics& m : metrics[0])
        if (m.values["val_loss"].is_number()) base_val.push_back(m.values["val_loss"].get<double>());
    for (size_t vi = 0; vi < variants.size(); vi++) {
        const AblationVariant& v = variants[vi];
        json runs = json::array();
        std::vector<json> values;
        int diverged = 0;
        for (size_t s = 0; s < seeds.size(); s++) {
            json r = metrics[vi][s].values;
            diverged += r.value("diverged", false) ? 1 : 0;
            values.push_back(r);
            r["seed"] = seeds[s];
            r["dir"] = run_path(v, seeds[s]);
            r["log"] = run_path(v, seeds[s]) + "/run.jsonl";
            r["steps"] = metrics[vi][s].last_step;
            runs.push_back(r);
        }
        json stats = json::object();
        for (const std::string& name : run_metric_names()) {
            if (name != "peak_memory") {
                stats[name] = mean_std(numbers(values, name));
                continue;
            }
            json mem = json::object();
            for (const std::string& cat : categories) mem[cat] = mean_std(numbers(values, name, cat));
            stats[name] = mem;
        }
        json row{{"name", v.name}, {"knob", v.knob}, {"value", v.value}, {"speed_only", v.speed_only},
                 {"runs", runs}, {"diverged", diverged}, {"metrics", stats}};
        if (vi > 0) {
            std::vector<double> val = numbers(values, "val_loss");
            // A run without a final validation loss (one that diverged) leaves the comparison
            // undefined: without it, it would compare the seeds that survived.
            const bool every_seed = val.size() == seeds.size() && base_val.size() == seeds.size();
            row["val_loss_diff"] = every_seed ? json(mean(val) - mean(base_val)) : json(nullptr);
            row["t"] = row["df"] = row["p_value"] = nullptr;
            if (every_seed && seeds.size() >= 2) {
                const WelchResult w = welch_t_test(val, base_val);
                row["t"] = std::isfinite(w.t) ? json(w.t) : json(nullptr);
                row["df"] = w.df;
                row["p_value"] = w.p;
            }
            if (v.speed_only) {
                const double d = max_loss_diff(metrics[vi], metrics[0]);
                row["loss_max_rel_diff"] = std::isfinite(d) ? json(d) : json(nullptr);
                row["loss_equal"] = d <= spec.loss_tol;
            }
        }
        out_variants.push_back(row);
    }
    json knobs = json::array();
    for (const AblationKnob& k : spec.knobs) knobs.push_back({{"name", k.name}, {"values", k.values}});
    return json{{"format", "sixnd-ablation"},
                {"train_args", spec.train_args},
                {"config_file", spec.config},
                {"knobs", knobs},
                {"seeds", seeds},
                {"loss_tol", spec.loss_tol},
                {"metrics", run_metric_names()},
                {"base_config", metrics[0][0].header.value("config", json::object())},
                {"variants", out_variants}};
}

std::string ablation_csv(const json& results) {
    auto num = [](const json& v) -> std::string {
        if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
        if (!v.is_number()) return "";
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.10g", v.get<double>());
        return buf;
    };
    // Values are knob values from the command line: quote them as CSV needs.
    auto quote = [](const std::string& s) {
        if (s.find_first_of(",\"\n") == std::string::npos) return s;
        std::string q = "\"";
        for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
    };
    std::string head = "variant,knob,value,seeds,diverged", body;
    bool first = true;
    for (const json& v : results.at("variants")) {
        std::string row = quote(v.at("name")) + "," + quote(v.at("knob")) + "," + quote(v.at("value")) + "," +
                          std::to_string(v.at("runs").size()) + "," + std::to_string(v.value("diverged", 0));
        for (const json& m : results.at("metrics")) {
            const std::string name = m.get<std::string>();
            const json& st = v.at("metrics").at(name);
            if (name == "peak_memory") {
                for (const auto& [cat, cst] : st.items()) {
                    if (first) head += ",peak_memory_" + cat + "_mean,peak_memory_" + cat + "_std";
                    row += "," + num(cst.at("mean")) + "," + num(cst.at("std"));
                }
                continue;
            }
            if (first) head += "," + name + "_mean," + name + "_std";
            row += "," + num(st.at("mean")) + "," + num(st.at("std"));
        }
        if (first) head += ",val_loss_diff,p_value,loss_equal";
        row += "," + num(v.value("val_loss_diff", json())) + "," + num(v.value("p_value", json())) + "," +
               num(v.value("loss_equal", json()));
        body += row + "\n";
        first = false;
    }
    return head + "\n" + body;
}

}  // namespace sixnd
