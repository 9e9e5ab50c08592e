// sixnd ablate: one knob at a time over several seeds (train/ablate.h). Flags it does not know
// are the base `sixnd train` flags, passed to every run.
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "cli/config_file.h"
#include "cli/train_flags.h"
#include "cli/uint64_flag.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "core/log.h"
#include "core/staging_dir.h"
#include "train/ablate.h"

namespace sixnd::cli {

namespace {

std::string self_exe() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) throw Error("/proc/self/exe", "cannot find the sixnd binary to start runs with");
    return std::string(buf, static_cast<size_t>(n));
}

// A number as f prints it, scaled (bytes to MB, a fraction to %); "-" for none.
std::string fmt(const nlohmann::json& v, const char* f, double scale = 1) {
    if (!v.is_number()) return "-";
    char buf[48];
    std::snprintf(buf, sizeof buf, f, v.get<double>() * scale);
    return buf;
}

// A short human table on stderr, each knob's cost beside its loss (peak memory in MB, MFU); the
// files hold everything.
void print_table(const nlohmann::json& r) {
    const char* row = "%-28s %-9s %-19s %-19s %-10s %-9s %-7s %-9s %-8s %s\n";
    std::fprintf(stderr, row, "variant", "diverged", "val loss", "val bpb", "tok/s", "peak MB", "MFU", "diff", "p",
                 "loss_equal");
    for (const auto& v : r.at("variants")) {
        const auto& m = v.at("metrics");
        auto pm = [&](const char* key, const char* f) {
            return fmt(m.at(key).at("mean"), f) + " +- " + fmt(m.at(key).at("std"), f);
        };
        const std::string diverged = std::to_string(v.value("diverged", 0)) + "/" + std::to_string(v.at("runs").size());
        std::fprintf(stderr, row, v.at("name").get<std::string>().c_str(), diverged.c_str(), pm("val_loss", "%.4f").c_str(),
                     pm("val_bpb", "%.4f").c_str(), fmt(m.at("tokens_per_s").at("mean"), "%.0f").c_str(),
                     fmt(m.at("peak_memory").value("peak", nlohmann::json::object()).value("mean", nlohmann::json()), "%.1f", 1e-6).c_str(),
                     fmt(m.at("mfu").at("mean"), "%.1f%%", 100).c_str(),
                     fmt(v.value("val_loss_diff", nlohmann::json()), "%+.4f").c_str(), fmt(v.value("p_value", nlohmann::json()), "%.3g").c_str(),
                     v.contains("loss_equal") ? (v["loss_equal"].get<bool>() ? "true" : "false") : "-");
    }
}

// A --flag sixnd ablate sets for each run itself (train/ablate.h).
bool owned_flag(const std::string& flag) { return flag.rfind("--", 0) == 0 && ablate_sets_flag(flag.substr(2)); }

// sixnd train's flags, never parsed: ablate looks its knobs up in them and reads config files
// as train will.
struct TrainParser {
    CLI::App app;
    TrainFlags unused;
    TrainParser() { add_train_flags(app, unused); }

    // The settings of a train config file, FILE:LINE each, as `sixnd train` reads them with the
    // flags `command_line` on its command line (which win: their lines are left out).
    std::vector<ConfigArg> config_args(const std::string& path, std::vector<std::string> command_line) {
        command_line.insert(command_line.end(), {"--config", path});
        return config_file_args(app, "train", command_line);
    }

    // Each knob is a sixnd train flag: one that is not is named here, rather than by train's
    // parser as an unexpected value ("The following arguments were not expected: 1 --nosuch").
    void require_flags(const std::vector<AblationKnob>& knobs) {
        for (const AblationKnob& k : knobs)
            if (!app.get_option_no_throw("--" + k.name))
                throw Error("--vary " + k.name, "not a sixnd train flag (sixnd train --help lists them)");
    }
};

// A config setting's value as it would be written on the command line (a flag: true or false).
std::string config_value(const ConfigArg& c) {
    return c.args.size() > 1 ? c.args[1] : c.args.empty() ? "false" : "true";
}

}  // namespace

int run_ablate(int argc, char** argv) {
    CLI::App app{"Ablate knobs one at a time over several seeds; other flags are the base `sixnd train` flags",
                 "sixnd ablate"};
    app.allow_extras();
    AblationSpec spec;
    std::vector<std::string> vary;
    std::string mpirun = "mpirun";
    int np = 0;
    app.add_option("--out", spec.out, "ablation directory (runs/, results.json, results.csv)")->required();
    app.add_option("--vary", vary, "KNOB=V1,V2,... : a train flag and its values, the first being the base's (repeatable; it overrules, "
                   "with a warning, a base flag naming the same knob); "
                   "config=A.toml,B.toml varies flags that change together")
        ->required();
    app.add_option("--seeds", spec.seeds, "seeds per variant (from --seed, default 1337, upward)")->capture_default_str();
    app.add_option("--config", spec.config, "base train flags from a TOML/INI file (as sixnd train --config; its seed is the first seed)");
    app.add_option("--np", np, "run each training under mpirun with this many processes");
    app.add_option("--mpirun", mpirun, "the mpirun command and its extra flags (with --np)")->capture_default_str();
    app.add_option("--loss-tol", spec.loss_tol, "speed-only knobs: largest relative loss difference counted as equal")
        ->capture_default_str();
    if (!parse_flags(app, argc, argv, ConfigFile::pass_on)) return 0;
    refuse_empty_values(app);
    // Without a trailing '/', which the paths under it would repeat (OUT//results.csv).
    spec.out = out_dir_path(spec.out).string();
    if (spec.seeds < 1) throw Error("--seeds", "must be at least 1");
    if (app.count("--np") && np < 1) throw Error("--np", "must be at least 1, got " + std::to_string(np));
    if (app.count("--mpirun") && np == 0)
        throw Error("--mpirun", "names the launcher of --np N processes; without --np the runs start directly");
    if (!(spec.loss_tol >= 0)) throw Error("--loss-tol", "must be a number >= 0");
    spec.knobs = parse_vary(vary);
    TrainParser train;
    train.require_flags(spec.knobs);
    // Knobs that must change together (a tokenizer and its shards) vary as whole config files.
    for (const AblationKnob& k : spec.knobs)
        if (k.name == "config" && !spec.config.empty())
            throw Error("--vary config", "cannot be combined with a base --config file");
    spec.train_args = app.remaining();
    // As given, --seed included: a base config file's lines that it overrides are not read.
    const std::vector<std::string> command_line = spec.train_args;
    // --seed is the first seed; the runs get base, base + 1, ...
    const auto take_base_seed = [&](std::string value, const std::string& where) {
        const std::string fault = uint64_value()(value);
        if (!fault.empty()) throw Error(where, fault);
        spec.base_seed = std::stoull(value);
        if (spec.base_seed > UINT64_MAX - static_cast<uint64_t>(spec.seeds - 1))
            throw Error(where, value + " + " + std::to_string(spec.seeds - 1) + " (--seeds " + std::to_string(spec.seeds) +
                                   ") is above 18446744073709551615 (2^64-1)");
    };
    // The base value of a varied knob is its --vary's first, as documented; a base flag saying
    // otherwise (a train command reused as the base) is overruled, but not silently.
    const auto warn_if_overruled = [&](const std::string& flag, const std::string& v, const std::string& setting) {
        for (const AblationKnob& k : spec.knobs)
            if (flag == "--" + k.name && v != k.values[0])
                log_warn("ablate: " + setting + " is overruled by --vary " + k.name + ": the base run uses " + k.values[0] +
                         " (its first value)");
    };
    for (size_t i = 0; i < spec.train_args.size();) {
        const std::string a = spec.train_args[i];
        const std::string flag = a.substr(0, a.find('='));
        if (owned_flag(flag)) throw Error(flag, "is set by sixnd ablate for each run");
        const bool inline_value = a.find('=') != std::string::npos;
        const std::string v = inline_value ? a.substr(a.find('=') + 1) : i + 1 < spec.train_args.size() ? spec.train_args[i + 1] : "";
        warn_if_overruled(flag, v, "base flag " + flag + " " + v);
        if (flag != "--seed") {
            i++;
            continue;
        }
        take_base_seed(v, "--seed");
        const size_t n = std::min(spec.train_args.size() - i, static_cast<size_t>(inline_value ? 1 : 2));
        spec.train_args.erase(spec.train_args.begin() + static_cast<long>(i), spec.train_args.begin() + static_cast<long>(i + n));
    }
    // The base config file is read as sixnd train will read it (the command line's flags win):
    // what ablate sets itself, or takes from it, must not hide in the file.
    if (!spec.config.empty()) {
        if (!std::filesystem::is_regular_file(spec.config)) throw Error(spec.config, "no such config file");
        for (const ConfigArg& c : train.config_args(spec.config, command_line)) {
            if (owned_flag(c.flag)) throw Error(c.where, c.flag.substr(2) + " is set by sixnd ablate for each run; leave it out of the base config");
            const std::string v = config_value(c);
            warn_if_overruled(c.flag, v, c.where + ": " + c.flag.substr(2) + " = " + v);
            if (c.flag == "--seed") take_base_seed(v, c.where);
        }
        spec.config = std::filesystem::absolute(spec.config).string();
    }
    // A varied config file's settings are the variant: a base flag on the command line, or
    // another knob, would win over them in its runs.
    for (const AblationKnob& k : spec.knobs) {
        if (k.name != "config") continue;
        std::set<std::string> overriding;
        for (const std::string& a : spec.train_args)
            if (a.rfind("--", 0) == 0) overriding.insert(a.substr(0, a.find('=')));
        for (const AblationKnob& other : spec.knobs) overriding.insert("--" + other.name);
        for (const std::string& path : k.values) {
            if (!std::filesystem::is_regular_file(path)) throw Error(path, "no such config file (--vary config)");
            for (const ConfigArg& c : train.config_args(path, {})) {
                if (owned_flag(c.flag)) throw Error(c.where, c.flag.substr(2) + " is set by sixnd ablate for each run; leave it out of a varied config");
                if (c.flag == "--seed")
                    throw Error(c.where, "seed: every variant runs the same seeds (ablate's --seed and --seeds); leave it out of a varied config");
                if (overriding.count(c.flag))
                    throw Error(c.where, c.flag.substr(2) + " is also given to every run as " + c.flag +
                                             ", which wins over a config file: this variant's value would be lost");
            }
        }
    }
    if (np > 0) {
        std::istringstream words(mpirun);
        for (std::string w; words >> w;) spec.launcher.push_back(w);
        if (spec.launcher.empty()) throw Error("--mpirun", "is empty; with --np it names the launcher (default mpirun)");
        spec.launcher.insert(spec.launcher.end(), {"-np", std::to_string(np)});
        spec.processes = np;
    }
    spec.exe = self_exe();
    nlohmann::json r = run_ablation(spec);
    print_table(r);
    std::printf("%s\n", nlohmann::json{{"results", spec.out + "/results.json"},
                                       {"csv", spec.out + "/results.csv"},
                                       {"variants", r["variants"].size()},
                                       {"runs", r["variants"].size() * static_cast<size_t>(spec.seeds)},
                                       {"ran", r["ran"]},
                                       {"skipped", r["skipped"]}}
                            .dump()
                            .c_str());
    return 0;
}

}  // namespace sixnd::cli
