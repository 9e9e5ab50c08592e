#include "train/run_dir.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/rng.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;

namespace sixnd {

void on_root_agreed(Comm* comm, const std::function<void()>& work) {
    std::exception_ptr fault;
    if (!comm || comm->rank() == 0) {
        try {
            work();
        } catch (const Error&) {
            fault = std::current_exception();
        }
    }
    const double failed = fault ? 1.0 : 0.0;
    if ((comm ? comm->all_reduce_sum_host(failed) : failed) == 0) return;
    if (fault) std::rethrow_exception(fault);
    // Rank 0's error says why, once; a line from every other rank would only bury it.
    throw AgreedError("rank " + std::to_string(comm->rank()), "stopping: rank 0 failed (its error says why)");
}

void on_all_agreed(Comm* comm, const std::function<void()>& work) {
    std::exception_ptr fault;
    try {
        work();
    } catch (const Error&) {
        fault = std::current_exception();
    }
    if (!comm) {
        if (fault) std::rethrow_exception(fault);
        return;
    }
    const std::vector<double> failed = comm->all_gather_host({fault ? 1.0 : 0.0});
    const auto first = std::find(failed.begin(), failed.end(), 1.0);
    if (first == failed.end()) return;
    if (fault && (comm->rank() == 0 || failed[0] == 0)) std::rethrow_exception(fault);
    const std::string rank = "rank " + std::to_string(comm->rank());
    const std::string stopping = "stopping: rank " + std::to_string(first - failed.begin()) + " failed (its error says why)";
    // Failed too, with rank 0: most likely the same fault (every rank opens the same files), which
    // rank 0 says; this rank's line would only repeat it.
    if (fault) throw AgreedError(rank, stopping);
    throw Error(rank, stopping);
}

void check_run_dir(const std::string& out) {
    require_directory_or_absent(out, "--out", "the run directory");
    require_directory_or_absent(out + "/checkpoints", "--out", "it must hold the run's checkpoints");
}

std::unique_ptr<DirLock> lock_run_dir(const std::string& out, Comm* comm) {
    std::unique_ptr<DirLock> lock;
    on_root_agreed(comm, [&] {
        // Before the lock file is created in a directory that turns out unfit.
        check_run_dir(out);
        lock = std::make_unique<DirLock>(out, "--out", "sixnd train");
        // Every run saves a checkpoint, at its end if not before: a checkpoint directory that
        // takes none (made read-only) is refused now, not after the steps it would cost.
        const std::string root = out + "/checkpoints";
        if (!fs::is_directory(root)) return;
        try {
            CheckpointWriter probe(root, 0, true);
        } catch (const Error& e) {
            throw Error(root, "takes no new checkpoint, and this run must save one: " + e.fault());
        }
    });
    // Every rank writes its optimizer state into rank 0's checkpoint directory: a rank whose --out
    // is another directory (node-local, or another working directory) would fail at the first save.
    if (comm && comm->size() > 1)
        on_all_agreed(comm, [&] {
            if (comm->rank() != 0 && !fs::exists(out + "/.lock"))
                throw Error("--out", out + " is not rank 0's run directory on rank " + std::to_string(comm->rank()) +
                                         " (no .lock of rank 0's there): every rank must see the same --out, on a "
                                         "shared filesystem");
        });
    return lock;
}

namespace {

// A finished checkpoint (DONE) whose meta.json cannot be read names no run: called another run's,
// it drew the advice to resume that run, which only reads the damaged file again.
void refuse_damaged(const std::string& dir) {
    try {
        read_meta(dir + "/meta.json");
    } catch (const Error& e) {
        throw Error(e.where(), e.fault() + "; which run saved " + dir + " is unknown: move it out of the checkpoint "
                               "directory, or pass --overwrite to delete it");
    }
}

}  // namespace

std::vector<std::string> claim_checkpoints(const std::string& root, const std::string& run_id, bool overwrite) {
    refuse_foreign_step_entries(root);
    std::vector<std::string> others;
    std::map<std::string, std::vector<std::string>> runs;  // every lineage's step directories, this run's included
    // A directory with neither DONE nor a readable meta.json is an interrupted copy, no run's
    // checkpoint: `latest` skips it and a save of its step replaces it.
    for (const CheckpointEntry& c : list_checkpoints(root)) {
        if (c.complete && c.run_id.empty() && !overwrite) refuse_damaged(c.dir);
        if (c.run_id != run_id && (c.complete || !c.run_id.empty())) others.push_back(c.dir);
        if (c.complete || !c.run_id.empty()) runs[c.run_id].push_back(c.dir);
    }
    if (others.empty() || overwrite) return others;
    if (runs.size() == 1)
        throw Error("--out", root + " holds " + std::to_string(others.size()) + " checkpoint(s) of another run (" +
                                 step_range(others) + "); continue that run with --resume latest, choose another --out, "
                                 "or pass --overwrite to delete them");
    // Two runs' checkpoints (one copied in beside another's): continuing either with --resume
    // latest, the advice above, takes the newest of both and refuses the other run's again.
    std::string listed;
    for (const auto& [id, dirs] : runs)
        listed += (listed.empty() ? "" : "; ") + std::string("run ") + id + (id == run_id ? " (this one)" : "") + ": " +
                  step_range(dirs);
    throw Error("--out", root + " holds the checkpoints of " + std::to_string(runs.size()) + " runs (" + listed +
                             "): a run directory holds one run's, and --resume latest takes the newest of any run's; move "
                             "the checkpoints of every run but the one to continue out of it (--overwrite would delete "
                             "every run's but this one's)");
}

void delete_other_runs(const std::string& root, const std::vector<std::string>& dirs) {
    if (dirs.empty()) return;
    for (const std::string& d : dirs) remove_checkpoint(d);
    log_info("--overwrite: deleted " + std::to_string(dirs.size()) + " checkpoint(s) of another run (" + step_range(dirs) +
             ") from " + root);
}

std::string new_run_id() {
    const uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    uint64_t s = t ^ (static_cast<uint64_t>(getpid()) << 32) ^ reinterpret_cast<uintptr_t>(&s);
    return hex64(splitmix64(s));
}

}  // namespace sixnd
