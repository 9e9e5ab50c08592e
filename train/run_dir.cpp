#include "train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/rng.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

// Whether path exists and is a directory, without following a symlink at the end; a symlink to
// a directory is a directory the user chose, so it is followed only for that question.
void require_directory_or_absent(const std::string& path, const std::string& what) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return;
        throw Error("--out", path + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) throw Error("--out", path + " exists and is not a directory (" + what + ")");
}

// A probe file proves the directory takes new files (read-only mounts, missing permission,
// and root's exemption from permission bits all answer the same way here).
void require_writable(const std::string& dir) {
    const std::string probe = dir + "/.write-probe-" + std::to_string(getpid());
    const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("--out", dir + " is not writable: " + std::strerror(errno));
    const bool wrote = write(fd, "x", 1) == 1;
    const int err = errno;
    close(fd);
    unlink(probe.c_str());
    if (!wrote) throw Error("--out", dir + " is not writable: " + std::strerror(err));
}

bool holds_only_lock(const fs::path& dir) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename() != ".lock") return false;
    return !ec;
}

}  // namespace

RunDirLock::RunDirLock(const std::string& out) : lock_path_(out + "/.lock") {
    if (out.empty()) throw Error("--out", "is empty; name the run directory");
    require_directory_or_absent(out, "the run directory");
    fs::path dir = fs::path(out).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();
    for (fs::path d = dir; !d.empty() && !fs::exists(fs::symlink_status(d)); d = d.parent_path()) created_.push_back(d);
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw Error("--out", out + ": cannot create the run directory: " + ec.message());
    try {
        lock(out);
    } catch (const Error&) {
        remove_created();
        throw;
    }
}

void RunDirLock::lock(const std::string& out) {
    require_directory_or_absent(out + "/checkpoints", "it must hold the run's checkpoints");
    require_writable(out);
    const std::string& lock = lock_path_;
    fd_ = open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("--out", lock + ": cannot open the run lock: " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd_);
        throw Error("--out", lock + " is not a regular file");
    }
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        const ssize_t n = pread(fd_, pid, sizeof pid - 1, 0);
        close(fd_);
        const std::string who = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "another process";
        throw Error("--out", out + " is in use by another sixnd train (pid " + who +
                                 "); one run directory holds one run at a time");
    }
    // The holder's pid, for the message a second run prints.
    const std::string me = std::to_string(getpid());
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
        close(fd_);
        throw Error("--out", lock + ": cannot write the run lock: " + std::strerror(errno));
    }
}

// A run that created its directory and ends with nothing in it but the lock (refused for bad
// input before it wrote anything) takes the directory away again. The lock file goes while it is
// still held, so no other run can be holding it.
RunDirLock::~RunDirLock() {
    if (fd_ < 0) return;
    const bool remove = !created_.empty() && holds_only_lock(created_.front());
    if (remove) unlink(lock_path_.c_str());
    close(fd_);
    if (remove) remove_created();
}

// Empty directories only (the deepest first): anything a run wrote keeps its directory.
void RunDirLock::remove_created() {
    for (const fs::path& d : created_) {
        std::error_code ec;
        if (!fs::remove(d, ec) || ec) return;
    }
}

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
    throw Error("rank " + std::to_string(comm->rank()), "stopping: rank 0 failed (its error says why)");
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
    throw Error("rank " + std::to_string(comm->rank()),
                "stopping: rank " + std::to_string(first - failed.begin()) + " failed (its error says why)");
}

std::unique_ptr<RunDirLock> lock_run_dir(const std::string& out, Comm* comm) {
    std::unique_ptr<RunDirLock> lock;
    on_root_agreed(comm, [&] { lock = std::make_unique<RunDirLock>(out); });
    return lock;
}

void claim_checkpoints(const std::string& root, const std::string& run_id, bool overwrite) {
    refuse_foreign_step_entries(root);
    std::vector<CheckpointEntry> others;
    // A directory with neither DONE nor a readable meta.json is an interrupted copy, no run's
    // checkpoint: `latest` skips it and a save of its step replaces it.
    for (const CheckpointEntry& c : list_checkpoints(root))
        if (c.run_id != run_id && (c.complete || !c.run_id.empty())) others.push_back(c);
    if (others.empty()) return;
    const std::string names = fs::path(others.front().dir).filename().string() +
                              (others.size() > 1 ? " .. " + fs::path(others.back().dir).filename().string() : "");
    if (!overwrite)
        throw Error("--out", root + " holds " + std::to_string(others.size()) + " checkpoint(s) of another run (" + names +
                                 "); continue that run with --resume latest, choose another --out, or pass --overwrite "
                                 "to delete them");
    for (const CheckpointEntry& c : others) remove_checkpoint(c.dir);
    log_info("--overwrite: deleted " + std::to_string(others.size()) + " checkpoint(s) of another run (" + names + ") from " + root);
}

std::string new_run_id() {
    const uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    uint64_t s = t ^ (static_cast<uint64_t>(getpid()) << 32) ^ reinterpret_cast<uintptr_t>(&s);
    return hex64(splitmix64(s));
}

}  // namespace sixnd
