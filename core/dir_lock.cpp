#include "core/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/made_dirs.h"
#include "core/printable.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

constexpr int kLockAttempts = 100;

// Whether a create in dir that failed with ENOENT found the directory gone (a holder that
// created it ended meanwhile and removed it) rather than one that takes no new files (/proc).
bool vanished(const std::string& dir, int err) {
    struct stat st {};
    return err == ENOENT && stat(dir.c_str(), &st) != 0 && errno == ENOENT;
}

// A probe file proves the directory takes new files (read-only mounts, missing permission,
// and root's exemption from permission bits all answer the same way here). False when the
// directory is gone.
bool require_writable(const std::string& dir, const std::string& flag) {
    const std::string probe = dir + "/.write-probe-" + std::to_string(getpid());
    const auto create = [&] { return open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644); };
    int fd = create();
    // A probe of this pid is there only if an earlier process of the same pid was killed while it
    // probed (in a container every run may get the same pid): it is no fault of the directory.
    if (fd < 0 && errno == EEXIST && unlink(probe.c_str()) == 0) fd = create();
    if (fd < 0) {
        const int err = errno;
        if (vanished(dir, err)) return false;
        throw Error(flag, dir + " is not writable: " + std::strerror(err));
    }
    const bool wrote = write(fd, "x", 1) == 1;
    const int err = errno;
    close(fd);
    unlink(probe.c_str());
    if (!wrote) throw Error(flag, dir + " is not writable: " + std::strerror(err));
    return true;
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

DirLock::DirLock(const std::string& dir, const std::string& flag, const std::string& holder) : lock_path_((fs::path(dir) / ".lock").string()) {
    if (dir.empty()) throw Error(flag, "is empty; name the directory to write");
    // A holder that ends while this process locks removes the file (and the directory it
    // created): a lock then taken is on a file no one else will open, and a directory checked
    // may be gone, so the lock is taken again on the directory as it now stands. Each retry
    // needs another holder to end.
    for (int attempt = 0; attempt < kLockAttempts; attempt++) {
        create(dir, flag);
        try {
            if (lock(dir, flag, holder)) return;
        } catch (const Error&) {
            remove_made_directories(created_);
            throw;
        }
    }
    throw Error(flag, lock_path_ + ": cannot lock: the file was replaced " + std::to_string(kLockAttempts) +
                          " times while it was being locked");
}

void DirLock::create(const std::string& dir, const std::string& flag) {
    require_directory_or_absent(dir, flag, "the directory " + flag + " names");
    std::error_code ec;
    created_ = make_directories(dir, ec);
    if (ec) throw Error(flag, dir + ": cannot create the directory: " + ec.message());
}

bool DirLock::lock(const std::string& dir, const std::string& flag, const std::string& holder) {
    if (!require_writable(dir, flag)) return false;
    const int fd = open(lock_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int err = errno;
        if (vanished(dir, err)) return false;
        throw Error(flag, lock_path_ + ": cannot open the lock: " + std::strerror(err));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        throw Error(flag, lock_path_ + " is not a regular file");
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        char pid[32] = "";
        const ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        close(fd);
        if (err != EWOULDBLOCK) throw Error(flag, lock_path_ + ": cannot lock (flock): " + std::strerror(err));
        // Empty while the holder is between its flock and writing its pid.
        const std::string who = n > 0 ? " (pid " + printable(std::string_view(pid, static_cast<size_t>(n))) + ")" : "";
        throw Error(flag, dir + " is in use by another " + holder + who + "; one directory takes one " + holder + " at a time");
    }
    struct stat now {};
    if (stat(lock_path_.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
        close(fd);
        return false;
    }
    fd_ = fd;
    // The holder's pid, for the message a second process prints.
    const std::string me = std::to_string(getpid());
    if (ftruncate(fd_, 0) != 0 || pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
        const int err = errno;
        release();
        throw Error(flag, lock_path_ + ": cannot write the lock: " + std::strerror(err));
    }
    return true;
}

DirLock::~DirLock() { release(); }

// The lock file goes while it is still held, so no other process can be holding it; only from a
// directory this lock made, and only once the directories made beside it ("run/sub/..") are gone.
void DirLock::release() {
    if (fd_ < 0) return;
    std::error_code ec;
    const fs::path lock_dir = fs::canonical(fs::path(lock_path_).parent_path(), ec);
    remove_made_directories(created_);
    const bool remove = !ec && std::find(created_.begin(), created_.end(), lock_dir) != created_.end() && holds_only_lock(lock_dir);
    if (remove) unlink((lock_dir / ".lock").c_str());
    close(fd_);
    fd_ = -1;
    if (remove) remove_made_directories(created_);
}

}  // namespace sixnd
