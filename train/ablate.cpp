// The ablation runner: the plan (variants x seeds), the check of every run's flags before the
// first run starts, one `sixnd train` child process per run (its output in the run's train.log;
// it dies with the runner), the skip/resume decision per run, and the results files.
#include "train/ablate.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/atomic_file.h"
#include "core/dir_lock.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/json_fault.h"
#include "core/log.h"
#include "core/read_file.h"
#include "core/sibling_name.h"
#include "core/split.h"
#include "core/subprocess.h"
#include "train/checkpoint.h"
#include "train/run_metrics.h"
#include "train/stop_signal.h"

namespace sixnd {

using nlohmann::json;
namespace fs = std::filesystem;

bool ablate_sets_flag(const std::string& name) { return name == "out" || name == "log" || name == "resume" || name == "check"; }

std::vector<AblationKnob> parse_vary(const std::vector<std::string>& specs) {
    std::vector<AblationKnob> knobs;
    std::set<std::string> seen;
    for (const std::string& spec : specs) {
        const size_t eq = spec.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
            throw Error("--vary", "expected KNOB=V1,V2,... (a train flag without dashes), got '" + spec + "'");
        AblationKnob k;
        k.name = spec.substr(0, eq);
        if (k.name.rfind("--", 0) == 0) k.name = k.name.substr(2);
        if (ablate_sets_flag(k.name) || k.name == "seed")
            throw Error("--vary", "'" + k.name + "' is set by sixnd ablate for each run; it cannot be varied");
        if (k.name == "help" || k.name == "h") throw Error("--vary", "'" + k.name + "' prints train's flags; it is not a knob");
        if (!seen.insert(k.name).second) throw Error("--vary", "knob '" + k.name + "' is given twice");
        for (const std::string& v : split_all(spec.substr(eq + 1), ',')) {
            if (v.empty()) throw Error("--vary", "empty value in '" + spec + "'");
            for (const std::string& w : k.values)
                if (w == v) throw Error("--vary", "value '" + v + "' is given twice in '" + spec + "'");
            k.values.push_back(v);
        }
        if (k.values.size() < 2) throw Error("--vary", "'" + spec + "' needs at least two values (the first is the base)");
        knobs.push_back(k);
    }
    if (knobs.empty()) throw Error("--vary", "at least one knob is needed");
    return knobs;
}

bool speed_only_knob(const std::string& knob) { return knob == "recompute" || knob == "attention" || knob == "zero"; }

std::vector<AblationVariant> ablation_variants(const std::vector<AblationKnob>& knobs) {
    std::vector<AblationVariant> out{{"base", "", "", "base", false}};
    std::set<std::string> dirs{"base"};
    for (const AblationKnob& k : knobs)
        for (size_t i = 1; i < k.values.size(); i++) {
            AblationVariant v{k.name + "=" + k.values[i], k.name, k.values[i], "", speed_only_knob(k.name)};
            for (char c : v.name) v.dir += (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("._=+-", c)) ? c : '_';
            // A longer name (a config file's path as the value, say) could not be created: it is
            // cut, and the whole name's hash keeps it apart from others cut alike.
            if (v.dir.size() > kNameMax) v.dir = sibling_name(v.dir, "-" + hex64(XXH3_64bits(v.name.data(), v.name.size())));
            if (!dirs.insert(v.dir).second)
                throw Error("--vary", "variants '" + v.name + "' and another both map to the directory runs/" + v.dir);
            out.push_back(v);
        }
    return out;
}

namespace {

// The flags of one run: base flags, base values of every knob, this variant's value, seed and
// where it writes. Later flags would clash with CLI11's one-value options, so each knob's
// flag is taken out of the base flags first.
std::vector<std::string> run_args(const AblationSpec& spec, const AblationVariant& v, uint64_t seed, const std::string& dir) {
    std::set<std::string> knob_flags;
    for (const AblationKnob& k : spec.knobs) knob_flags.insert("--" + k.name);
    std::vector<std::string> a{"train"};
    for (size_t i = 0; i < spec.train_args.size(); i++) {
        const std::string& f = spec.train_args[i];
        const std::string flag = f.substr(0, f.find('='));
        if (!knob_flags.count(flag)) {
            a.push_back(f);
            continue;
        }
        if (f.find('=') == std::string::npos) i++;  // skip its value too
    }
    if (!spec.config.empty()) a.insert(a.end(), {"--config", spec.config});
    for (const AblationKnob& k : spec.knobs) a.insert(a.end(), {"--" + k.name, k.name == v.knob ? v.value : k.values[0]});
    a.insert(a.end(), {"--seed", std::to_string(seed), "--out", dir, "--log", dir + "/run.jsonl", "--resume", "latest"});
    return a;
}

// What a failed `sixnd train` said: its error line without the prefix (mpirun may print more
// after it); else, when the launcher refused (mpirun as root, too few slots), the first
// paragraph of its last message block (between lines of dashes, Open MPI's form), joined into
// one line; else the output's last line that has a word in it. Only what follows `from` is
// read: a run's train.log holds the output of its earlier attempts too.
std::string failure_line(const std::string& path, std::uintmax_t from = 0) {
    const std::string prefix = "sixnd train: error: ";
    const auto is_rule = [](const std::string& l) { return l.size() >= 8 && l.find_first_not_of('-') == std::string::npos; };
    std::ifstream in(path);
    in.seekg(static_cast<std::streamoff>(from));
    std::string line, last, error, block;
    bool in_block = false, in_paragraph = false;
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) == 0) error = line.substr(prefix.size());
        if (is_rule(line)) {
            in_block = !in_block;
            if (in_block) block.clear();
            in_paragraph = in_block;
            continue;
        }
        const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
        if (in_paragraph && blank && !block.empty()) in_paragraph = false;
        if (in_paragraph && !blank) block += (block.empty() ? "" : " ") + line.substr(line.find_first_not_of(" \t"));
        if (std::any_of(line.begin(), line.end(), [](unsigned char c) { return std::isalnum(c); })) last = line;
    }
    return !error.empty() ? error : !block.empty() ? block : !last.empty() ? last : "it printed nothing";
}

// A child's output while nothing may be written under --out yet; removed with this object.
class TempOutput {
public:
    TempOutput() : path_((std::filesystem::temp_directory_path() / "sixnd-ablate-check-XXXXXX").string()) {
        const int fd = mkstemp(path_.data());
        if (fd < 0) throw Error(path_, "cannot create a temporary file for sixnd train's output");
        close(fd);
    }
    ~TempOutput() { std::remove(path_.c_str()); }
    TempOutput(const TempOutput&) = delete;
    TempOutput& operator=(const TempOutput&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

std::string run_dir(const AblationSpec& spec, const AblationVariant& v, uint64_t seed) {
    return spec.out + "/runs/" + v.dir + "/seed-" + std::to_string(seed);
}

std::vector<std::string> train_command(const AblationSpec& spec, const AblationVariant& v, uint64_t seed,
                                       const std::string& dir) {
    std::vector<std::string> argv = spec.launcher;
    argv.push_back(spec.exe);
    for (const std::string& a : run_args(spec, v, seed, dir)) argv.push_back(a);
    return argv;
}

// The error that ends an interrupted ablation: where it stopped, and how to go on.
Error interrupted(const AblationSpec& spec, int sig, const std::string& where) {
    return Error(spec.out, std::string("stopped by ") + StopSignals::name(sig) + " " + where +
                                     "; run the same command again to resume (finished runs are skipped, an "
                                     "interrupted one resumes from its latest checkpoint)");
}

// Every variant's command line goes through `sixnd train --check` (the parser and checks of a
// real run, under the same launcher, without touching its --out) before --out is created: a bad
// knob or value is refused while nothing has run and nothing is written. The seeds of a variant
// differ in --seed alone, which sixnd ablate has checked (every seed fits 64 bits), so its first
// seed speaks for all: one check (one launcher start, about a second) per variant, not per run.
void check_runs(const AblationSpec& spec, const std::vector<AblationVariant>& variants) {
    for (const AblationVariant& v : variants) {
        const uint64_t seed = spec.base_seed;
        std::vector<std::string> argv = train_command(spec, v, seed, run_dir(spec, v, seed));
        argv.push_back("--check");
        const TempOutput output;
        const int rc = run_process(argv, output.path());
        if (const int sig = ForwardSignals::received()) throw interrupted(spec, sig, "while the runs' flags were checked");
        if (rc != 0)
            throw Error("run " + v.name + ", seed " + std::to_string(seed), failure_line(output.path()));
    }
}

// How the run that wrote this log diverged ("stopped at --max-bad-steps"), or "" when it did
// not, or has no log that reads (the run's own error then says what went wrong).
std::string divergence(const std::string& log) {
    if (!fs::exists(log)) return "";
    std::string reason;
    try {
        reason = read_run_metrics(log).diverged_at;
    } catch (const Error&) {
        return "";
    }
    if (reason == "max_bad_steps") return "stopped at --max-bad-steps";
    if (reason == "max_rollbacks") return "stopped at --max-rollbacks";
    return reason.empty() ? "" : "stopped: an update made the parameters non-finite";
}

// The step the newest checkpoint holds, and the step the run ends at (its --stop-at or
// --steps), from the checkpoint's meta.json; {0, 0} without a checkpoint.
std::pair<int, int> checkpoint_progress(const std::string& dir) {
    const std::string latest = latest_checkpoint(dir + "/checkpoints");
    if (latest.empty()) return {0, 0};
    const std::string path = latest + "/meta.json";
    const CheckpointMeta meta = read_meta(path);
    try {
        const int steps = meta.config.at("steps"), stop_at = meta.config.value("stop_at", 0);
        return {meta.step, stop_at > 0 ? std::min(stop_at, steps) : steps};
    } catch (const json::exception& e) {
        throw Error(path, "config: missing or mistyped field: " + json_fault(e));
    }
}

json plan_json(const AblationSpec& spec) {
    json knobs = json::array();
    for (const AblationKnob& k : spec.knobs) knobs.push_back({{"name", k.name}, {"values", k.values}});
    return json{{"train_args", spec.train_args}, {"config_file", spec.config}, {"knobs", knobs},
                {"seeds", spec.seeds}, {"base_seed", spec.base_seed}, {"processes", spec.processes}};
}

// The first plan entry in which two plans differ, for the message that refuses a rerun.
std::string plan_difference(const json& old, const json& plan) {
    for (const auto& [key, value] : plan.items())
        if (!old.contains(key) || old[key] != value) return key;
    return "entries";
}

// --out is new, empty, or an ablation of the same plan (OUT/ablation.json records it), which a
// rerun resumes; an ablation of another plan, or anything else, is never written into.
void check_out(const AblationSpec& spec) {
    const fs::path out(spec.out);
    if (!fs::exists(fs::symlink_status(out))) return;
    if (!fs::is_directory(out)) throw Error(spec.out, "exists and is not a directory");
    const std::string path = spec.out + "/ablation.json";
    if (!fs::exists(fs::symlink_status(path))) {
        for (const auto& e : fs::directory_iterator(out))
            if (e.path().filename() != ".lock")
                throw Error(spec.out, "exists and holds '" + e.path().filename().string() +
                                          "', and no ablation.json: it is not an ablation; give a new or empty directory");
        return;
    }
    json old;
    try {
        old = json::parse(read_whole_file(path));
    } catch (const json::exception&) {
        throw Error(path, "is not JSON; is this an ablation directory?");
    }
    // Relative paths in the flags resolve against the working directory: a rerun from another
    // one would train the remaining runs on other files and table them beside the finished ones.
    // (Ablations from before the directory was recorded have no "cwd".)
    if (old.is_object() && old.contains("cwd")) {
        const std::string here = fs::current_path().string();
        if (old["cwd"] != here)
            throw Error(spec.out, "was started in " + old["cwd"].dump() + ", and relative paths in its flags resolve "
                                  "against the directory it runs in: rerun the same command from there, not " + here);
        old.erase("cwd");
    }
    // Each process of a run takes --batch rows: runs under another --np train on other batches.
    // (Ablations from before the count was recorded have no "processes".)
    json plan = plan_json(spec);
    if (old.is_object() && !old.contains("processes")) plan.erase("processes");
    if (old != plan)
        throw Error(spec.out, "holds another ablation (its ablation.json has other " + plan_difference(old, plan) +
                                  "); rerun it with its own flags to resume it, or use another --out");
}

// OUT/ablation.json is written before the first run, so that a rerun after a failed or
// interrupted run resumes this plan, from the directory it started in, and never mixes in runs
// of another.
void claim_directory(const AblationSpec& spec) {
    fs::create_directories(spec.out + "/runs");
    const std::string path = spec.out + "/ablation.json";
    if (fs::exists(path)) return;
    json plan = plan_json(spec);
    plan["cwd"] = fs::current_path().string();
    write_file_atomically(path, plan.dump(2) + "\n");
}

}  // namespace

AblationProgress ablation_progress(const std::string& out) {
    const std::string path = out + "/ablation.json";
    AblationSpec spec;
    spec.out = out;
    try {
        const json plan = json::parse(read_whole_file(path));
        for (const json& k : plan.at("knobs"))
            spec.knobs.push_back({k.at("name").get<std::string>(), k.at("values").get<std::vector<std::string>>()});
        spec.seeds = plan.at("seeds").get<int>();
        spec.base_seed = plan.at("base_seed").get<uint64_t>();
    } catch (const json::exception& e) {
        throw Error(path, "not the plan sixnd ablate writes: " + json_fault(e));
    }
    AblationProgress p;
    for (const AblationVariant& v : ablation_variants(spec.knobs))
        for (int i = 0; i < spec.seeds; i++) {
            p.planned++;
            if (fs::exists(run_dir(spec, v, spec.base_seed + static_cast<uint64_t>(i)) + "/DONE")) p.done++;
        }
    return p;
}

json run_ablation(const AblationSpec& spec) {
    const std::vector<AblationVariant> variants = ablation_variants(spec.knobs);
    if (static_cast<uint64_t>(spec.seeds) * variants.size() > static_cast<uint64_t>(INT_MAX))
        throw Error("--seeds", std::to_string(spec.seeds) + " seeds x " + std::to_string(variants.size()) +
                                   " variants is more runs than an ablation counts (" + std::to_string(INT_MAX) + ")");
    // Ctrl-C lets the run in flight write its checkpoint (sixnd train stops so at one signal and
    // drops it at a second), then ends the ablation with the way back in. A launcher gets it as
    // SIGUSR1, which mpirun passes on to the ranks (SIGINT it turns into a kill a second later).
    const ForwardSignals signals(spec.launcher.empty() ? 0 : SIGUSR1);
    check_out(spec);
    check_runs(spec, variants);
    // Another ablate may have claimed --out since the first look: look again under the lock.
    const DirLock lock(spec.out, "--out", "sixnd ablate");
    check_out(spec);
    claim_directory(spec);
    const int total = static_cast<int>(variants.size()) * spec.seeds;
    int k = 0, ran = 0, skipped = 0;
    for (const AblationVariant& v : variants)
        for (int i = 0; i < spec.seeds; i++) {
            if (const int sig = ForwardSignals::received()) throw interrupted(spec, sig, "before " + v.name + " seed " +
                                                                                   std::to_string(spec.base_seed + i) + " started");
            const uint64_t seed = spec.base_seed + static_cast<uint64_t>(i);
            const std::string dir = run_dir(spec, v, seed);
            const std::string what = "[" + std::to_string(++k) + "/" + std::to_string(total) + "] " + v.name + " seed " +
                                     std::to_string(seed);
            fs::create_directories(dir);
            if (fs::exists(dir + "/DONE")) {
                log_info("ablate " + what + ": finished earlier, skipped");
                skipped++;
                continue;
            }
            const auto [at, end] = checkpoint_progress(dir);
            if (end > 0 && at >= end) {  // killed after its last checkpoint, before DONE
                write_file_atomically(dir + "/DONE", "");
                log_info("ablate " + what + ": finished earlier, skipped");
                skipped++;
                continue;
            }
            log_info("ablate " + what + (at > 0 ? ": resuming from step " + std::to_string(at) : ": running"));
            const auto t0 = std::chrono::steady_clock::now();
            std::error_code no_log;
            const std::uintmax_t log_size = fs::file_size(dir + "/train.log", no_log);
            const int rc = run_process(train_command(spec, v, seed, dir), dir + "/train.log");
            if (const int sig = ForwardSignals::received()) {
                const int step = checkpoint_progress(dir).first;
                throw interrupted(spec, sig, "while " + v.name + " seed " + std::to_string(seed) + " ran; " +
                                           (step > 0 ? "its latest checkpoint is at step " + std::to_string(step)
                                                     : std::string("it has no checkpoint yet")) +
                                           " (" + dir + "/train.log)");
            }
            // A run that diverged has finished: it is a result (a learning rate too high, say),
            // counted in the table, not a failure of the ablation.
            const std::string how = rc != 0 ? divergence(dir + "/run.jsonl") : "";
            if (rc != 0 && how.empty())
                throw Error(dir + "/train.log", "sixnd train exited with status " + std::to_string(rc) + ": " +
                                                    failure_line(dir + "/train.log", no_log ? 0 : log_size) +
                                                    "; the same command resumes the ablation (finished runs are skipped)");
            if (rc != 0) log_warn("ablate " + what + ": diverged (" + how + "; " + dir + "/train.log)");
            // DONE is the promise that the run's log holds it: a train that exits 0 without
            // one (a flag that only printed something) has not run.
            if (!fs::exists(dir + "/run.jsonl"))
                throw Error(dir + "/train.log", "sixnd train exited with status 0 without writing its run log (run.jsonl)");
            write_file_atomically(dir + "/DONE", "");
            ran++;
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            log_info("ablate " + what + ": done in " + std::to_string(static_cast<int>(secs + 0.5)) + " s");
        }
    json results = ablation_results(spec);
    write_file_atomically(spec.out + "/results.json", results.dump(2) + "\n");
    write_file_atomically(spec.out + "/results.csv", ablation_csv(results));
    results["ran"] = ran;
    results["skipped"] = skipped;
    return results;
}

}  // namespace sixnd
