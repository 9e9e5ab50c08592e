#include "train/run_metrics.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "plan/check.h"
#include "train/run_log.h"

namespace sixnd {

using nlohmann::json;

const std::vector<std::string>& run_metric_names() {
    static const std::vector<std::string> names = {"final_train_loss", "val_loss", "val_bpb", "tokens_per_s", "mfu", "hfu",
                                                   "peak_memory",      "comm_bytes", "spikes", "wall_clock_s"};
    return names;
}

namespace {

// The numbers a step record gives the metrics, read through checked fields.
struct StepNumbers {
    double loss = 0, tokens_per_s = 0, mfu = 0, hfu = 0, comm_bytes = 0, step_ms = 0;
    bool warmup = false;  // the first step record of a process (a fresh run's or a resumed one's)
    json val_loss, val_bpb;  // null when the step had no evaluation (or its value was not finite)
    std::map<std::string, double> memory;
};

// Optional, and null where the run logged a non-finite value.
json number_or_null(const plan::LogFields& f, const nlohmann::json& r, const std::string& key) {
    if (!f.has(key) || r[key].is_null()) return nullptr;
    return f.number(key);
}

// Every field of a step record is checked as `sixnd plan --check` checks it (one rule for both
// readers), and those the metrics need must be there, so that a record of the wrong shape ends
// in one error naming FILE:LINE and the field, not deep in the metrics or the drawing.
StepNumbers read_step(const plan::LogFields& f, const nlohmann::json& r) {
    plan::check_step_record(f);
    StepNumbers s;
    s.loss = f.number("loss");
    f.number("tokens");
    s.tokens_per_s = f.number_or("tokens_per_s", 0.0);
    s.mfu = f.number_or("mfu", 0.0);
    s.hfu = f.number_or("hfu", 0.0);
    s.comm_bytes = f.number_or("comm_bytes", 0.0);
    s.step_ms = f.number_or("step_ms", 0.0);
    s.val_loss = number_or_null(f, r, "val_loss");
    s.val_bpb = number_or_null(f, r, "val_bpb");
    if (f.has("memory")) {
        f.object("memory");
        for (const auto& [cat, bytes] : r["memory"].items())
            if (cat != "total" && bytes.is_number()) s.memory[cat] = bytes.get<double>();
    }
    return s;
}

// Drops the entries of steps `first` and later.
template <class ByStep>
void erase_from(ByStep& by_step, int first) {
    by_step.erase(by_step.lower_bound(first), by_step.end());
}

// What the records of a branch give, by step, so that a resume or a rollback cuts every kind of
// record at the same step.
struct Branch {
    std::map<int, StepNumbers> steps;
    std::map<int, std::pair<json, json>> evals;  // step -> val_loss, val_bpb of its evaluation
    std::set<int> spikes;
    std::set<int> reached;  // steps with a step record, a skip or a stop: how far the branch got
    // step -> line of the records, dropped with their numbers above.
    std::multimap<int, int> step_lines, eval_lines, event_lines;

    void cut(int first) {
        erase_from(steps, first);
        erase_from(evals, first);
        erase_from(spikes, first);
        erase_from(reached, first);
        for (auto* lines : {&step_lines, &eval_lines, &event_lines}) erase_from(*lines, first);
    }
};

// A rollback's record, and that of the spike that made it (step -1: none).
struct Rollback {
    int step = 0, line = 0;
    int spike_step = -1, spike_line = 0;
};

// The stops of sixnd train that end a run for good: a rerun from its checkpoint goes the same
// way (a "signal" stop, the other reason, is an interruption).
bool divergence_stop(const std::string& reason) {
    return reason == "max_bad_steps" || reason == "max_rollbacks" || reason == "non_finite_parameters";
}

void check_header(const plan::LogFields& h) {
    if (h.has("config")) h.object("config");
    if (h.has("model")) h.object("model");
    if (h.has("device_name")) h.text("device_name");
}

}  // namespace

RunMetrics read_run_metrics(const std::string& log_path) {
    RunMetrics m;
    Branch branch;
    // The rollbacks and the spikes that made them: a rollback undoes the steps after the one it
    // goes back to, not the rollbacks before it, so a resume alone cuts these.
    std::vector<Rollback> rollbacks;
    std::pair<int, int> last_spike{-1, 0};  // step, line
    // step -> line of its newest checkpoint record: the checkpoint a resume from that step reads.
    std::map<int, int> checkpoint_lines;
    // Whether the log ends on steps skipped for a non-finite loss or gradient (or, in
    // m.diverged_at, on a stop that ends the run): a step record after them (a resumed run's)
    // means the run went on.
    bool ended_non_finite = false;
    // A header opens a segment; a resumed one starts at the step of its first record.
    bool segment_opened = false;
    // Until the segment's first step record: each process pays its start-up in its first step.
    bool process_first = false;
    read_run_log(log_path, [&](const plan::LogRecord& rec) {
        const plan::LogFields f(log_path, rec);
        const std::string type = f.has("type") ? f.text("type") : "";
        if (segment_opened && type != "header" && f.has("step")) {
            segment_opened = false;
            const int first = f.integer("step", 0);
            // The run went on: how the branch it left ended (on bad steps, or stopped for good)
            // is not how it ended, even where this segment writes no step record (it skips every
            // step it runs).
            ended_non_finite = false;
            m.diverged_at.clear();
            branch.cut(first);
            // A rollback is the resumed checkpoint's past when that checkpoint was saved after it
            // (in the steps the rollback ran again, which come before the spike's step); without
            // the checkpoint's record, those of the resumed steps and later are taken as its future.
            const auto saved = checkpoint_lines.find(first - 1);
            rollbacks.erase(std::remove_if(rollbacks.begin(), rollbacks.end(),
                                           [&](const Rollback& r) {
                                               return saved != checkpoint_lines.end() ? r.line > saved->second : r.step >= first;
                                           }),
                            rollbacks.end());
        }
        if (type == "header") {
            check_header(f);
            m.header = rec.json;
            segment_opened = true;
            process_first = true;
        } else if (type == "step") {
            const int step = f.integer("step", 0);
            branch.steps[step] = read_step(f, rec.json);
            branch.steps[step].warmup = std::exchange(process_first, false);
            branch.step_lines.emplace(step, rec.line);
            branch.reached.insert(step);
            ended_non_finite = false;
            m.diverged_at.clear();
        } else if (type == "event") {
            plan::check_event_record(f);  // one rule for every reader of run logs, as for steps
            const std::string event = f.text("event");
            const int step = f.integer("step", 0);
            if (event == "rollback") {
                // The steps after the one rolled back to are run again: every record they logged
                // before is the branch the rollback left. The spike that made it stays, as the
                // rollback does: it is why the run rolled back.
                const int to = f.integer("to", 0);
                branch.cut(to + 1);
                ended_non_finite = false;
                Rollback r{step, rec.line};
                if (last_spike.first == f.integer("from", 0)) std::tie(r.spike_step, r.spike_line) = last_spike;
                rollbacks.push_back(r);
                return;
            }
            if (event == "checkpoint") checkpoint_lines[step] = rec.line;
            (event == "eval" ? branch.eval_lines : branch.event_lines).emplace(step, rec.line);
            if (event == "spike") {
                branch.spikes.insert(step);
                last_spike = {step, rec.line};
            }
            if (event == "skip" || event == "stop") branch.reached.insert(step);
            if (event == "skip" && f.has("reason") && f.text("reason") == "non_finite") ended_non_finite = true;
            if (event == "stop" && f.has("reason") && divergence_stop(f.text("reason"))) m.diverged_at = f.text("reason");
            // A skipped step is evaluated when one is due, but writes no step record: its numbers
            // are in the event only.
            if (event == "eval") branch.evals[step] = {number_or_null(f, rec.json, "val_loss"), number_or_null(f, rec.json, "val_bpb")};
        }
    });
    const auto& steps = branch.steps;
    if (steps.empty() && m.diverged_at.empty()) throw Error(log_path, "has no step records");
    m.last_step = branch.reached.empty() ? 0 : *branch.reached.rbegin();
    std::vector<int> lines;
    for (const auto* by_step : {&branch.step_lines, &branch.eval_lines, &branch.event_lines})
        for (const auto& [s, line] : *by_step) lines.push_back(line);
    std::set<int> spikes = branch.spikes;
    for (const Rollback& r : rollbacks) {
        lines.push_back(r.line);
        if (r.spike_step < 0) continue;
        lines.push_back(r.spike_line);
        spikes.insert(r.spike_step);
    }
    std::sort(lines.begin(), lines.end());
    for (int line : lines) {
        if (!m.branch_lines.empty() && m.branch_lines.back().second + 1 == line) m.branch_lines.back().second = line;
        else m.branch_lines.emplace_back(line, line);
    }
    for (const auto& [s, r] : steps) m.step_loss[s] = r.loss;

    json& v = m.values;
    v = json::object();
    const bool diverged = !m.diverged_at.empty();
    v["diverged"] = diverged;
    // A run that ended on non-finite steps has no final loss: an earlier step's, or an
    // evaluation before it diverged, would show a diverged run as a healthy one (sixnd train's
    // own summary says null too).
    const bool ended_bad = diverged || ended_non_finite;
    v["final_train_loss"] = ended_bad ? json(nullptr) : json(steps.rbegin()->second.loss);
    v["val_loss"] = v["val_bpb"] = nullptr;
    auto& evals = branch.evals;
    for (const auto& [s, r] : steps)
        if (!r.val_loss.is_null() || !r.val_bpb.is_null()) evals.emplace(s, std::make_pair(r.val_loss, r.val_bpb));
    // The last evaluation's, null where it was not finite.
    if (!evals.empty() && !diverged) std::tie(v["val_loss"], v["val_bpb"]) = evals.rbegin()->second;
    const bool warmed_up = std::any_of(steps.begin(), steps.end(), [](const auto& s) { return !s.second.warmup; });
    const auto mean = [&](double StepNumbers::*field) {
        double sum = 0;
        int n = 0;
        for (const auto& [s, r] : steps) {
            if (warmed_up && r.warmup) continue;
            sum += r.*field;
            n++;
        }
        return n > 0 ? json(sum / n) : json(nullptr);
    };
    v["tokens_per_s"] = mean(&StepNumbers::tokens_per_s);
    v["mfu"] = mean(&StepNumbers::mfu);
    v["hfu"] = mean(&StepNumbers::hfu);
    json mem = json::object();
    double comm = 0, wall_ms = 0;
    for (const auto& [s, r] : steps) {
        for (const auto& [cat, bytes] : r.memory) mem[cat] = std::max(mem.value(cat, 0.0), bytes);
        comm += r.comm_bytes;
        wall_ms += r.step_ms;
    }
    v["peak_memory"] = mem;
    v["comm_bytes"] = comm;
    v["spikes"] = spikes.size();
    v["wall_clock_s"] = wall_ms / 1e3;
    return m;
}

}  // namespace sixnd
