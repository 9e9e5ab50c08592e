// sixnd report: plots and a report (report.md, and report.html with the plots embedded) for
// training runs and ablations. The numbers come from train/run_metrics (the same ones the
// ablation table holds); the drawing is matplotlib, in scripts/report_plots.py, started as a
// child process with report_input.json, drawing into a staging directory that then replaces OUT
// whole (train/report_dir.h: which OUT may be replaced).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/json_fault.h"
#include "core/read_file.h"
#include "core/subprocess.h"
#include "train/ablate.h"
#include "train/report_dir.h"
#include "train/run_metrics.h"

namespace sixnd::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const char* kScript = "report_plots.py";

// The plotting script: beside the binary (an installed copy), in $SIXND_SOURCE/scripts, or in
// the source tree above a build directory.
std::string find_script() {
    std::vector<fs::path> places;
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (const char* src = std::getenv("SIXND_SOURCE")) places.push_back(fs::path(src) / "scripts" / kScript);
    if (n > 0) {
        const fs::path dir = fs::path(std::string(buf, static_cast<size_t>(n))).parent_path();
        places.push_back(dir / kScript);
        places.push_back(dir.parent_path() / "scripts" / kScript);
        places.push_back(dir.parent_path() / "share" / "sixnd" / kScript);
    }
    std::string tried;
    for (const fs::path& p : places) {
        if (fs::is_regular_file(p)) return p.string();
        tried += (tried.empty() ? "" : ", ") + p.string();
    }
    throw Error(kScript, "not found (looked at " + tried + "); set SIXND_SOURCE to the sixnd source directory");
}

const char* kInputKinds = "run log, run directory or ablation directory";

// A run's log: the file itself, DIR/run.jsonl (sixnd ablate's layout), or DIR's only *.jsonl.
// The drawing script reads the log again, so a pipe (read once) is refused with the devices.
std::string find_log(const std::string& arg) {
    const fs::file_type type = path_type(arg);
    if (type == fs::file_type::regular) return arg;
    if (type == fs::file_type::not_found) throw Error(arg, std::string("no such ") + kInputKinds);
    if (type != fs::file_type::directory) require_regular_file(arg, kInputKinds);
    const fs::path run_log = fs::path(arg) / "run.jsonl";
    if (path_type(run_log.string()) == fs::file_type::regular) return run_log.string();
    std::vector<std::string> logs;
    std::error_code ec;
    fs::directory_iterator entries(arg, ec);
    if (ec) throw Error(arg, "cannot be looked at: " + ec.message());
    for (const auto& e : entries)
        if (e.path().extension() == ".jsonl" && path_type(e.path().string()) == fs::file_type::regular)
            logs.push_back(e.path().string());
    if (logs.size() != 1)
        throw Error(arg, logs.empty() ? "holds no run log (*.jsonl) and no results.json"
                                      : "holds several run logs (*.jsonl); name the one to report");
    return logs[0];
}

// results.json as sixnd ablate writes it, and every run log it names read as a run given alone
// is (train/run_metrics.h checks each record), so that the drawing script is handed only files
// that hold what it draws. Each run gains its "branch", as a run given alone has.
json ablation(const std::string& arg, const fs::path& results) {
    const std::string path = results.string();
    json r;
    try {
        r = json::parse(read_whole_file(path));
    } catch (const json::exception& e) {
        throw Error(path, "not JSON: " + json_fault(e));
    }
    if (!r.is_object() || !r.contains("format") || r["format"] != "sixnd-ablation")
        throw Error(path, "is not a sixnd ablate results file, so " + arg + " is not an ablation directory");
    const auto check = [&](bool ok, const std::string& what) {
        if (!ok) throw Error(path, what + ": not the results file sixnd ablate writes");
    };
    check(r.contains("variants") && r["variants"].is_array() && !r["variants"].empty(), "no variants (an empty or missing array)");
    for (const char* key : {"train_args", "config_file", "knobs", "seeds", "base_config"})
        check(r.contains(key), std::string("no '") + key + "'");
    // The table is drawn from every metric's mean and std: one missing (a results file of an
    // older sixnd) is said here, not by the drawing script's traceback.
    const auto is_stat = [](const json* st) {
        return st && st->is_object() && st->contains("mean") && st->contains("std") &&
               ((*st)["mean"].is_number() || (*st)["mean"].is_null()) && ((*st)["std"].is_number() || (*st)["std"].is_null());
    };
    const json no_memory{{"mean", nullptr}, {"std", nullptr}};
    for (json& v : r["variants"]) {
        check(v.is_object() && v.contains("name") && v["name"].is_string() && v.contains("runs") && v["runs"].is_array() &&
                  !v["runs"].empty(),
              "a variant without a name or runs");
        const std::string name = v["name"].get<std::string>();
        for (const std::string& metric : run_metric_names()) {
            const json* st = v.contains("metrics") && v["metrics"].is_object() && v["metrics"].contains(metric)
                                 ? &v["metrics"][metric] : nullptr;
            // Peak memory by category: "peak" is absent when the logs held no memory records.
            if (metric == "peak_memory") st = st && st->is_object() ? (st->contains("peak") ? &(*st)["peak"] : &no_memory) : nullptr;
            check(is_stat(st), "variant " + name + " has no " + metric + " mean and std (rerun its sixnd ablate command, "
                               "which skips the finished runs and writes the table again)");
        }
        for (json& run : v["runs"]) {
            check(run.is_object() && run.contains("log") && run["log"].is_string(),
                  "a run of variant " + v["name"].get<std::string>() + " names no log");
            run["branch"] = read_run_metrics((fs::path(arg) / run["log"].get<std::string>()).string()).branch_lines;
        }
    }
    return json{{"kind", "ablation"}, {"path", fs::absolute(arg).string()}, {"results", r}};
}

json source(const std::string& arg) {
    const fs::path results = fs::path(arg) / "results.json";
    const bool dir = path_type(arg) == fs::file_type::directory;
    if (dir && path_type(results.string()) == fs::file_type::regular) return ablation(arg, results);
    // sixnd ablate writes results.json after its last run: before that its table would be
    // some variants' seeds only, and p-values over a different number of seeds.
    if (dir && path_type((fs::path(arg) / "ablation.json").string()) == fs::file_type::regular) {
        const AblationProgress p = ablation_progress(arg);
        throw Error(arg, "ablation not finished (" + std::to_string(p.done) + " of " + std::to_string(p.planned) +
                             " runs done, no results.json): rerun the sixnd ablate command that made it (it skips the "
                             "finished runs), then report it");
    }
    const std::string log = find_log(arg);
    const RunMetrics m = read_run_metrics(log);
    // Named by its directory (or file) as resolved: a run reported as "." or "run/.." is named
    // by the directory that is, not "." or "..".
    const fs::path path = fs::absolute(log).lexically_normal();
    std::string name = path.parent_path().filename().string();
    if (path.filename() != "run.jsonl" || name.empty()) name = path.stem().string();
    return json{{"kind", "run"},
                {"path", fs::absolute(log).string()},
                {"name", name},
                {"metrics", m.values},
                {"steps", m.last_step},
                // The lines the plots draw: what the table counts (RunMetrics::branch_lines).
                {"branch", m.branch_lines},
                {"config", m.header.value("config", json::object())},
                {"model", m.header.value("model", json::object())},
                {"device", m.header.value("device_name", "")}};
}

// The drawing script's account of a report file it could not write (disk full, file too large):
// one line, "NAME\tFAULT", on a pipe whose write end it inherits, since the disk the report
// goes to may take nothing more. Non-blocking, so a grandchild holding the write end open
// cannot hang the read.
class FaultPipe {
public:
    FaultPipe() {
        if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0 || fcntl(fds_[1], F_SETFD, 0) != 0)
            throw Error("sixnd report", std::string("cannot make a pipe for the drawing script: ") + std::strerror(errno));
    }
    ~FaultPipe() {
        for (int fd : fds_)
            if (fd >= 0) close(fd);
    }
    FaultPipe(const FaultPipe&) = delete;
    FaultPipe& operator=(const FaultPipe&) = delete;

    std::string write_end() const { return std::to_string(fds_[1]); }
    // What the script wrote, once it has exited; empty when nothing.
    std::string line() const {
        std::string got;
        char buf[4096];
        for (ssize_t n; (n = read(fds_[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
        return got;
    }

private:
    int fds_[2] = {-1, -1};
};

}  // namespace

int run_report(int argc, char** argv) {
    CLI::App app{"Plots (PNG), report.md and a self-contained report.html from runs and ablations", "sixnd report"};
    std::vector<std::string> inputs;
    std::string out_flag;
    app.add_option("inputs", inputs, "run logs, run directories or ablation directories (sixnd ablate --out)")->required();
    app.add_option("--out", out_flag, "directory for the plots and reports (new, empty, or an earlier report)")->required();
    if (!parse_flags(app, argc, argv)) return 0;
    refuse_empty_values(app);
    json sources = json::array();
    for (const std::string& in : inputs) sources.push_back(source(in));
    // A run is named by its directory, which runs of an ablation share (runs/<variant>/seed-N):
    // runs that would share a name in the table and the legends are named by their paths.
    std::map<std::string, int> named;
    for (const json& s : sources)
        if (s["kind"] == "run") named[s["name"].get<std::string>()]++;
    for (size_t i = 0; i < sources.size(); i++)
        if (sources[i]["kind"] == "run" && named[sources[i]["name"].get<std::string>()] > 1) sources[i]["name"] = inputs[i];
    // Ablations' variants are named by their knobs (base, lr=1e-2): with two ablations in one
    // report, each variant is prefixed by its ablation's path (scripts/report_plots.py).
    const auto ablations = std::count_if(sources.begin(), sources.end(), [](const json& s) { return s["kind"] == "ablation"; });
    for (size_t i = 0; i < sources.size(); i++)
        if (ablations > 1 && sources[i]["kind"] == "ablation") sources[i]["name"] = inputs[i];
    const std::string script = find_script();
    // The first Python that has matplotlib: $SIXND_PYTHON, python3 on PATH (which may be a
    // virtual environment's without it), Debian's.
    std::vector<std::string> pythons{"python3", "/usr/bin/python3"};
    if (const char* py = std::getenv("SIXND_PYTHON")) pythons.insert(pythons.begin(), py);
    std::string python;
    for (const std::string& py : pythons)
        if (run_process({py, "-c", "import matplotlib"}, "/dev/null") == 0) {
            python = py;
            break;
        }
    if (python.empty())
        throw Error("python3", "with matplotlib not found: sixnd report draws its plots with it (Debian: apt-get install python3-matplotlib)");
    ReportDir out(out_flag);
    const std::string input = (fs::path(out.staging()) / ReportDir::kInput).string();
    write_file_atomically(input, json{{"sources", sources}}.dump(1) + "\n");
    const FaultPipe faults;
    const int rc = run_process({python, script, input, out.staging(), faults.write_end()});
    if (rc != 0) {
        const std::string line = faults.line();
        const size_t tab = line.find('\t');
        if (tab != std::string::npos && line.back() == '\n')
            throw Error((fs::path(out.out()) / line.substr(0, tab)).string(), line.substr(tab + 1, line.size() - tab - 2));
        throw Error(script, "failed with status " + std::to_string(rc));
    }
    out.commit();
    std::printf("%s\n", json{{"report", (fs::path(out.out()) / "report.md").string()},
                             {"html", (fs::path(out.out()) / "report.html").string()},
                             {"sources", sources.size()}}
                            .dump()
                            .c_str());
    return 0;
}

}  // namespace sixnd::cli
