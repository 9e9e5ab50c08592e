#include "train/checkpoint.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string_view>

#include "core/atomic_file.h"
#include "core/dir_swap.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/read_file.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

std::string step_name(int step) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "step-%08d", step);
    return buf;
}

// Size and checksum, read in pieces; a regular file only (a device would never end).
FileSum file_sum(const std::string& path) {
    require_regular_file(path);
    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> h(XXH64_createState(), &XXH64_freeState);
    XXH64_reset(h.get(), 0);
    std::vector<char> piece(size_t(4) << 20);
    uint64_t bytes = 0;
    while (size_t got = std::fread(piece.data(), 1, piece.size(), f.get())) {
        XXH64_update(h.get(), piece.data(), got);
        bytes += got;
    }
    if (std::ferror(f.get())) throw Error(path, std::string("read failed: ") + std::strerror(errno));
    return FileSum{bytes, hex64(XXH64_digest(h.get()))};
}

bool is_plain_directory(const fs::path& p) {
    std::error_code ec;
    return fs::symlink_status(p, ec).type() == fs::file_type::directory;
}

}  // namespace

bool is_checkpoint_name(const std::string& name) {
    if (name.size() < 13 || name.size() > 15 || name.rfind("step-", 0) != 0 ||
        name.find_first_not_of("0123456789", 5) != std::string::npos)
        return false;
    const long long step = std::stoll(name.substr(5));
    return step <= INT_MAX && name == step_name(static_cast<int>(step));
}

std::filesystem::path checkpoint_path(const std::string& dir) {
    fs::path p = fs::path(dir).lexically_normal();
    return p.has_filename() ? p : p.parent_path();
}

CheckpointMeta read_meta(const std::string& path) {
    require_regular_file(path);
    return CheckpointMeta::parse(read_whole_file(path), path);
}

uint64_t xxh64_bytes(const void* data, size_t bytes) { return XXH64(data, bytes, 0); }

namespace {

// The hidden name a checkpoint has while remove_checkpoint deletes it: "." step-N ".deleting".
constexpr std::string_view kRemovingPrefix = ".", kRemovingSuffix = ".deleting";

}  // namespace

void remove_checkpoint(const std::string& dir) {
    const fs::path p(dir);
    const fs::path trash = p.parent_path() / (std::string(kRemovingPrefix) + p.filename().string() + std::string(kRemovingSuffix));
    std::error_code ec;
    fs::remove_all(trash, ec);
    fs::rename(p, trash, ec);
    if (ec) throw Error(dir, "cannot move the checkpoint aside to delete it: " + ec.message());
    fs::remove_all(trash, ec);
}

namespace {

// The names of a re-saved step's swap (core/dir_swap.h): hidden ".step-N.tmp.PID" and
// ".step-N.old.PID" beside it.
OutSiblings resave_siblings(const fs::path& step_dir) { return OutSiblings{step_dir, ".", ".tmp.", ".old."}; }

}  // namespace

void restore_moved_aside_checkpoints(const std::string& root) {
    std::error_code ec;
    std::set<std::string> steps;
    for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        const size_t old = name.find(".old.");
        if (name.rfind(".step-", 0) == 0 && old != std::string::npos) steps.insert(name.substr(1, old - 1));
    }
    for (const std::string& step : steps) restore_aside(resave_siblings(fs::path(root) / step));
}

void finish_interrupted_removals(const std::string& root) {
    const size_t affixes = kRemovingPrefix.size() + kRemovingSuffix.size();
    std::error_code ec;
    std::vector<fs::path> left;
    for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        if (name.size() > affixes && name.rfind(kRemovingPrefix, 0) == 0 &&
            name.compare(name.size() - kRemovingSuffix.size(), kRemovingSuffix.size(), kRemovingSuffix) == 0 &&
            is_checkpoint_name(name.substr(kRemovingPrefix.size(), name.size() - affixes)))
            left.push_back(e.path());
    }
    for (const fs::path& p : left) {
        fs::remove_all(p, ec);
        if (ec) throw Error(p.string(), "cannot finish deleting this checkpoint, which a killed run began: " + ec.message());
        log_info("removed " + p.string() + ", a checkpoint whose deletion a killed run began");
    }
}

CheckpointWriter::CheckpointWriter(const std::string& root, int step, bool create)
    : final_(root + "/" + step_name(step)), tmp_(root + "/." + step_name(step) + ".tmp"), create_(create) {
    if (!create) return;
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) throw Error(root, "cannot create checkpoint directory: " + ec.message());
    fs::remove_all(tmp_, ec);
    fs::create_directory(tmp_, ec);
    if (ec) throw Error(tmp_, "cannot create temporary checkpoint directory: " + ec.message());
}

CheckpointWriter::~CheckpointWriter() {
    if (committed_ || !create_) return;
    std::error_code ec;
    fs::remove_all(tmp_, ec);
}

void CheckpointWriter::add_file(const std::string& name, const void* data, size_t bytes) {
    add_file(name, [&](AtomicFile& f) { f.write(data, bytes); });
}

void CheckpointWriter::add_file(const std::string& name, const std::function<void(AtomicFile&)>& write) {
    AtomicFile f(tmp_ + "/" + name);
    write(f);
    f.commit();
}

std::string CheckpointWriter::commit(CheckpointMeta meta) {
    meta.files.clear();
    // Read in pieces: the largest file is a rank's optimizer state, which is not held whole.
    for (const auto& e : fs::directory_iterator(tmp_)) meta.files[e.path().filename().string()] = file_sum(e.path().string());
    write_file_atomically(tmp_ + "/meta.json", meta.to_text());
    write_file_atomically(tmp_ + "/DONE", "");
    std::error_code ec;
    if (fs::exists(fs::symlink_status(final_, ec)) && !is_plain_directory(final_))
        throw Error(final_, "exists and is not a checkpoint directory (a symlink or a file); not replacing it");
    if (fs::exists(final_)) {
        // Saving the same step again (a resumed run): swapped in whole where the file system can
        // (core/dir_swap.h), so that a kill leaves the old copy or the new one under the step's
        // name. The swap's names are hidden `.step-*` siblings, which prune_checkpoints clears.
        const OutSiblings swap = resave_siblings(final_);
        fs::rename(tmp_, swap.staging(), ec);
        if (ec) throw Error(final_, "cannot rename the checkpoint into place: " + ec.message());
        tmp_ = swap.staging().string();  // the destructor's to remove, should the swap fail
        replace_dir(swap, "checkpoint");
    } else {
        fs::rename(tmp_, final_, ec);
        if (ec) throw Error(final_, "cannot rename the checkpoint into place: " + ec.message());
        // Before retention removes an older checkpoint, this one is on disk under its name.
        sync_parent_dir(final_);
    }
    committed_ = true;
    return final_;
}

CheckpointReader::CheckpointReader(const std::string& dir) : dir_(dir) {
    const fs::file_type type = path_type(dir);
    if (type != fs::file_type::directory)
        throw Error(dir, type == fs::file_type::not_found
                             ? "no such checkpoint directory"
                             : "is not a directory (a checkpoint is a directory: OUT/checkpoints/step-N)");
    const bool done = path_present(dir + "/DONE");
    if (!done && path_type(dir + "/checkpoints") == fs::file_type::directory) {
        const std::string latest = latest_checkpoint(dir + "/checkpoints");
        throw Error(dir, latest.empty() ? "is a run directory, not a checkpoint, and holds no complete checkpoint"
                                        : "is a run directory, not a checkpoint: give one of its checkpoints, e.g. the latest, " +
                                              latest);
    }
    if (!done && !latest_checkpoint(dir).empty())
        throw Error(dir, "is a run's checkpoints directory, not a checkpoint: give one of them, e.g. the latest, " +
                             latest_checkpoint(dir));
    // meta.json is written just before DONE: without it nothing of a checkpoint was ever there.
    if (!done)
        throw Error(dir, path_present(dir + "/meta.json")
                             ? "incomplete checkpoint: the DONE marker is missing"
                             : "is not a checkpoint (it holds no meta.json and no DONE marker; a checkpoint is "
                               "OUT/checkpoints/step-N)");
    meta_ = read_meta(dir + "/meta.json");
    // latest, pruning and a rollback go by the directory's name: a copy renamed to another step
    // would resume at one step and be taken for another.
    const std::string own = checkpoint_path(dir).filename().string();
    if (is_checkpoint_name(own) && own != step_name(meta_.step))
        throw Error(dir, "holds the checkpoint of step " + std::to_string(meta_.step) + " (its meta.json) under the name " + own +
                             " of another step");
    for (const auto& [name, info] : meta_.files) {
        const std::string p = dir + "/" + name;
        if (!path_present(p)) throw Error(p, "missing checkpoint file");
        const FileSum got = file_sum(p);
        if (got.bytes != info.bytes)
            throw Error(p, "truncated or resized: " + std::to_string(got.bytes) + " bytes, expected " + std::to_string(info.bytes));
        if (got.xxh64 != info.xxh64) throw Error(p, "checksum mismatch: the file is corrupt");
    }
}

std::string CheckpointReader::read_file(const std::string& name) const {
    if (!has_file(name)) throw Error(dir_, "checkpoint has no file '" + name + "'");
    return read_whole_file(dir_ + "/" + name);
}

std::vector<CheckpointEntry> list_checkpoints(const std::string& root) {
    std::vector<CheckpointEntry> out;
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return out;
    for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        if (!is_checkpoint_name(name) || !is_plain_directory(e.path())) continue;
        CheckpointEntry c;
        c.dir = e.path().string();
        c.step = std::stoi(name.substr(5));
        c.complete = fs::exists(e.path() / "DONE", ec);
        try {
            c.run_id = read_meta(c.dir + "/meta.json").run_id;
        } catch (const Error&) {
            c.run_id.clear();
        }
        out.push_back(c);
    }
    std::sort(out.begin(), out.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
    return out;
}

void refuse_foreign_step_entries(const std::string& root) {
    std::error_code ec;
    if (!fs::is_directory(root, ec)) return;
    for (const auto& e : fs::directory_iterator(root, ec)) {
        if (!is_checkpoint_name(e.path().filename().string()) || is_plain_directory(e.path())) continue;
        const bool link = fs::is_symlink(e.symlink_status(ec));
        throw Error(e.path().string(), std::string(link ? "is a symlink" : "is not a directory") +
                                           ", not a checkpoint this run wrote; move it out of the checkpoint directory");
    }
}

std::string latest_checkpoint(const std::string& root) {
    std::string best;
    for (const CheckpointEntry& c : list_checkpoints(root))
        if (c.complete) best = c.dir;
    return best;
}

std::string step_range(const std::vector<std::string>& dirs) {
    return fs::path(dirs.front()).filename().string() +
           (dirs.size() > 1 ? " .. " + fs::path(dirs.back()).filename().string() : "");
}

void prune_checkpoints(const std::string& root, int keep, const std::string& run_id, int newest_step, int rollback_horizon) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(".step-", 0) == 0) fs::remove_all(e.path(), ec);
    }
    if (run_id.empty()) return;
    std::vector<std::string> older, abandoned;  // this lineage's, oldest first
    // older[rollback_from] on, a rollback may need: the newest at or before the horizon, and the
    // newer ones that later horizons reach (all, while none is old enough); at a horizon of
    // newest_step, the newest alone.
    const bool older_reachable = rollback_horizon >= 0 && rollback_horizon < newest_step;
    size_t rollback_from = older_reachable ? 0 : SIZE_MAX;
    for (const CheckpointEntry& c : list_checkpoints(root)) {
        if (!c.complete || c.run_id != run_id) continue;
        if (older_reachable && c.step <= rollback_horizon) rollback_from = older.size();
        if (c.step < newest_step) older.push_back(c.dir);
        if (c.step > newest_step) abandoned.push_back(c.dir);
    }
    for (const std::string& dir : abandoned) remove_checkpoint(dir);
    if (!abandoned.empty())
        log_info("deleted " + std::to_string(abandoned.size()) + " checkpoint(s) newer than step " + std::to_string(newest_step) +
                 " (" + step_range(abandoned) + "): the branch this run left when it went back to an older step");
    if (keep <= 0) return;
    // The checkpoint at newest_step is one of the `keep`.
    const size_t keep_older = static_cast<size_t>(keep) - 1;
    for (size_t i = 0; i + keep_older < older.size() && i < rollback_from; i++) remove_checkpoint(older[i]);
}

}  // namespace sixnd
