// One knob at a time: a base training configuration, knobs each with a list of values (the
// first value of each knob is the base's), and K seeds. Variants are the base plus, for each
// knob, each of its other values with every other knob at its base value — not a grid. Every
// variant x seed trains as its own `sixnd train` process (optionally under mpirun) in
// OUT/runs/<variant>/seed-<seed>, so runs are isolated; a finished run is never redone and an
// interrupted one resumes from its latest checkpoint. The table (OUT/results.json, .csv) is
// computed from the run logs (train/run_metrics.h) with Welch's t-test against the base.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd {

struct AblationKnob {
    std::string name;                 // a `sixnd train` flag without its dashes, e.g. "recompute"
    std::vector<std::string> values;  // values[0] is the base's
};

struct AblationVariant {
    std::string name;  // "base", or "KNOB=VALUE"
    std::string knob;  // empty for the base
    std::string value;
    std::string dir;   // directory name under OUT/runs (the name with unsafe characters replaced)
    bool speed_only = false;  // the knob changes speed and memory, not the numbers
};

// The train flags (without dashes) sixnd ablate sets for each run itself: out, log, resume, check.
// Neither the base flags, a config file nor --vary may set them (the seed is ablate's too, but
// taken from the base flags as the first seed).
bool ablate_sets_flag(const std::string& name);
// "KNOB=V1,V2,..." -> knob; throws Error("--vary", ...) on a malformed spec or a repeated knob.
std::vector<AblationKnob> parse_vary(const std::vector<std::string>& specs);
std::vector<AblationVariant> ablation_variants(const std::vector<AblationKnob>& knobs);
// recompute, attention and zero change how the same arithmetic is scheduled, not its result.
bool speed_only_knob(const std::string& knob);

struct AblationSpec {
    std::string out;                      // the ablation directory
    std::vector<std::string> train_args;  // base `sixnd train` flags (without --out/--log/--resume/--seed/--check)
    std::string config;                   // base --config file ("" = none), absolute
    std::vector<AblationKnob> knobs;
    int seeds = 2;
    uint64_t base_seed = 1337;            // seeds are base_seed, base_seed + 1, ...
    std::vector<std::string> launcher;    // e.g. {"mpirun", "-np", "2"}; empty: run directly
    int processes = 1;                    // per run (the launcher's -np): they share its batch
    double loss_tol = 1e-4;               // relative difference under which losses count as equal
    std::string exe;                      // the sixnd binary the runs are started with
};

// Runs (or skips, or resumes) every variant x seed, then writes OUT/results.json and
// OUT/results.csv and returns the results. Before anything is written it refuses an OUT that is
// neither new, empty nor this ablation (rerun from the working directory it started in, against
// which its flags' relative paths resolve), and any run whose flags `sixnd train --check` refuses
// (naming the run). Throws Error when a run fails (naming its log) or a SIGINT, SIGTERM or
// SIGHUP came (core/subprocess.h: the run in flight stops with a checkpoint); OUT is then
// resumable.
nlohmann::json run_ablation(const AblationSpec& spec);

// An ablation directory's runs: how many it plans (OUT/ablation.json, written before the first
// run) and how many have finished. Throws Error naming ablation.json when it is not one.
struct AblationProgress {
    int done = 0, planned = 0;
};
AblationProgress ablation_progress(const std::string& out);

// The results table from the run logs under OUT/runs (every run must have a log).
nlohmann::json ablation_results(const AblationSpec& spec);
std::string ablation_csv(const nlohmann::json& results);

}  // namespace sixnd
