// A directory that one process at a time writes (a run's --out, an ablation's --out): before
// anything is computed it is checked — a non-empty path naming a directory, or nothing yet, that
// this process can write into — then created and locked with flock(2) on DIR/.lock, so that a
// second process on the same directory fails at once instead of both writing the same files. The
// kernel drops the lock when the process ends, however it ends, so a killed process never leaves
// a stale one. A directory this lock created and left holding only the lock (bad input refused
// before anything was written) is removed with it.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace sixnd {

class DirLock {
public:
    // Throws Error(flag, ...) naming the fault: empty path, not a directory, not writable,
    // held by another process (`holder`, e.g. "sixnd train", with its pid), or a lock the file
    // system refuses (DIR/.lock and the reason).
    DirLock(const std::string& dir, const std::string& flag, const std::string& holder);
    ~DirLock();
    DirLock(const DirLock&) = delete;
    DirLock& operator=(const DirLock&) = delete;

private:
    void create(const std::string& dir, const std::string& flag);
    // False when the directory or the file locked is no longer there (its holder removed it
    // meanwhile).
    bool lock(const std::string& dir, const std::string& flag, const std::string& holder);
    void release();
    std::string lock_path_;
    std::vector<std::filesystem::path> created_;  // directories this lock made, the deepest first
    int fd_ = -1;
};

// Throws Error(flag, ...) when path exists and is not a directory (a symlink to one counts, a
// symlink to nothing does not); `what` says what it must be.
void require_directory_or_absent(const std::string& path, const std::string& flag, const std::string& what);

}  // namespace sixnd
