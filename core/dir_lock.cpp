#include "core/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

// A probe file proves the directory takes new files (read-only mounts, missing permission,
// and root's exemption from permission bits all answer the same way here).
void require_writable(const std::string& dir, const std::string& flag) {
    const std::string probe = dir + "/.write-probe-" + std::to_string(getpid());
    const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw Error(flag, dir + " is not writable: " + std::strerror(errno));
    const bool wrote = write(fd, "x", 1) == 1;
    const int err = errno;
    close(fd);
    unlink(probe.c_str());
    if (!wrote) throw Error(flag, dir + " is not writable: " + std::strerror(err));
}

bool holds_only_lock(const fs::path& dir) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename() != ".lock") return false;
    return !ec;
}

}  // namespace

// A symlink to a directory is a directory the user chose, so it is followed for this question.
void require_directory_or_absent(const std::string& path, const std::string& flag, const std::string& what) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        const int err = errno;
        std::error_code ec;
        // A link to nothing: creating the directory would fail with a bare "File exists".
        if (err == ENOENT && fs::is_symlink(fs::symlink_status(path, ec)))
            throw Error(flag, path + " is a symbolic link to " + fs::read_symlink(path, ec).string() +
                                  ", which does not exist (" + what + ")");
        if (err == ENOENT) return;
        throw Error(flag, path + ": " + std::strerror(err));
    }
    if (!S_ISDIR(st.st_mode)) throw Error(flag, path + " exists and is not a directory (" + what + ")");
}

DirLock::DirLock(const std::string& dir, const std::string& flag, const std::string& holder) : lock_path_(dir + "/.lock") {
    if (dir.empty()) throw Error(flag, "is empty; name the directory to write");
    require_directory_or_absent(dir, flag, "the directory " + flag + " names");
    fs::path d = fs::path(dir).lexically_normal();
    if (d.filename().empty()) d = d.parent_path();
    for (; !d.empty() && !fs::exists(fs::symlink_status(d)); d = d.parent_path()) created_.push_back(d);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(flag, dir + ": cannot create the directory: " + ec.message());
    try {
        lock(dir, flag, holder);
    } catch (const Error&) {
        remove_created();
        throw;
    }
}

void DirLock::lock(const std::string& dir, const std::string& flag, const std::string& holder) {
    require_writable(dir, flag);
    fd_ = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(flag, lock_path_ + ": cannot open the lock: " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd_);
        throw Error(flag, lock_path_ + " is not a regular file");
    }
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = "";
        const ssize_t n = pread(fd_, pid, sizeof pid - 1, 0);
        close(fd_);
        const std::string who = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "another process";
        throw Error(flag, dir + " is in use by another " + holder + " (pid " + who + "); one directory takes one " +
                              holder + " at a time");
    }
    // The holder's pid, for the message a second process prints.
    const std::string me = std::to_string(getpid());
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
        close(fd_);
        throw Error(flag, lock_path_ + ": cannot write the lock: " + std::strerror(errno));
    }
}

// The lock file goes while it is still held, so no other process can be holding it.
DirLock::~DirLock() {
    if (fd_ < 0) return;
    const bool remove = !created_.empty() && holds_only_lock(created_.front());
    if (remove) unlink(lock_path_.c_str());
    close(fd_);
    if (remove) remove_created();
}

// Empty directories only (the deepest first): anything written keeps its directory.
void DirLock::remove_created() {
    for (const fs::path& d : created_) {
        std::error_code ec;
        if (!fs::remove(d, ec) || ec) return;
    }
}

}  // namespace sixnd
