#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/digits.h"
#include "core/error.h"
#include "core/log.h"
#include "core/sibling_name.h"

namespace sixnd {

const char* file_kind(unsigned mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

namespace {

std::filesystem::path dir_of(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    return parent.empty() ? "." : parent;
}

// What keeps the directory an output goes in from taking it: missing, or something else (a
// file the path runs through) under its name.
std::string dir_fault(const std::filesystem::path& dir) {
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        return "cannot create the output: " + dir.string() + " is " + file_kind(st.st_mode) + ", not a directory";
    return "cannot create the output: the directory " + dir.string() + " does not exist";
}

}  // namespace

void check_replaceable_file(const std::string& path) {
    if (path.empty()) throw Error("output", "the path is empty");
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return;
        if (errno == ENOTDIR) throw Error(path, dir_fault(dir_of(path)));
        throw Error(path, std::string("cannot check the output: ") + std::strerror(errno));
    }
    if (S_ISREG(st.st_mode)) return;
    throw Error(path, std::string("exists and is ") + file_kind(st.st_mode) +
                          "; sixnd replaces only regular files (use - for standard output where a verb allows it)");
}

void check_not_same_file(const std::string& out, const std::string& input, const std::string& input_flag) {
    struct stat a, b;
    if (out.empty() || input.empty() || ::stat(out.c_str(), &a) != 0 || ::stat(input.c_str(), &b) != 0) return;
    if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        throw Error(out, "is the same file as " + input_flag + " " + input + "; refusing to overwrite an input");
}

void check_not_same_output(const std::string& out, const std::string& other, const std::string& other_flag) {
    check_not_same_file(out, other, other_flag);
    if (out.empty() || other.empty()) return;
    std::error_code ea, eb;
    const std::filesystem::path a = std::filesystem::weakly_canonical(std::filesystem::absolute(out), ea);
    const std::filesystem::path b = std::filesystem::weakly_canonical(std::filesystem::absolute(other), eb);
    if (!ea && !eb && a == b)
        throw Error(out, "is the same file as " + other_flag + " " + other + "; two outputs cannot share one file");
}

namespace {

// The create that fails is the temporary file's, beside the output: a fault of the directory
// (missing, read-only, or one such as /proc that takes no new files) reads as a fault of a path
// the user never named unless the message says so.
std::string create_fault(const std::string& path, int err) {
    const std::filesystem::path dir = dir_of(path);
    std::error_code ec;
    if ((err == ENOENT || err == ENOTDIR) && !std::filesystem::is_directory(dir, ec)) return dir_fault(dir);
    const std::string what = std::string("cannot create the output: ") + std::strerror(err);
    if (err == ENOENT || err == EACCES || err == EPERM || err == EROFS)
        return what + " (it is written as a new file in " + dir.string() + " and renamed into place, and " + dir.string() +
               " takes no new files)";
    return what;
}

// The pid in name when name is a temporary name AtomicFile gives path (NAME.tmp.PID.N, cut to
// fit), else -1.
long temporary_pid(const std::string& path, const std::string& name) {
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos) return -1;
    const std::string suffix = name.substr(at);
    const size_t dot = suffix.find('.', 5);
    if (dot == std::string::npos || !all_digits(std::string_view(suffix).substr(dot + 1))) return -1;
    const long pid = sibling_pid_value(std::string_view(suffix).substr(5, dot - 5));
    if (pid < 0 || sibling_name(std::filesystem::path(path).filename().string(), suffix) != name) return -1;
    return pid;
}

std::mutex g_temporaries_mutex;
// The names (last components) of this process's temporary files, from just before each is
// created until its AtomicFile ends: one with this process's pid that is not among them was left
// by an earlier process of the same pid (in a container every run may get the same one).
std::multiset<std::string> g_own_temporaries;

void own_temporary(const std::string& temp, bool own) {
    const std::string name = std::filesystem::path(temp).filename().string();
    std::lock_guard<std::mutex> lock(g_temporaries_mutex);
    if (own) g_own_temporaries.insert(name);
    else if (const auto it = g_own_temporaries.find(name); it != g_own_temporaries.end()) g_own_temporaries.erase(it);
}

// Removes path's temporary files left by writers that were killed with SIGKILL (the one signal
// after which nothing cleans up), so they do not pile up beside an output rewritten run after
// run. Only regular files under path's own temporary names, of processes that no longer exist,
// or of an earlier process of this pid. A directory is listed once per process (a shard
// directory has thousands of entries and each shard is an AtomicFile).
void remove_dead_writers_temporaries(const std::string& path) {
    static std::map<std::string, std::vector<std::string>> candidates;  // by directory: names with ".tmp."
    const std::string dir = dir_of(path).string();
    std::lock_guard<std::mutex> lock(g_temporaries_mutex);
    auto listed = candidates.find(dir);
    if (listed == candidates.end()) {
        listed = candidates.emplace(dir, std::vector<std::string>()).first;
        std::error_code ec;
        for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            std::string name = it->path().filename().string();
            if (name.find(".tmp.") != std::string::npos) listed->second.push_back(std::move(name));
        }
    }
    auto& names = listed->second;
    for (auto it = names.begin(); it != names.end();) {
        const long pid = temporary_pid(path, *it);
        const std::string stale = (std::filesystem::path(dir) / *it).string();
        struct stat st;
        const bool gone = pid == ::getpid() ? g_own_temporaries.count(*it) == 0 : writer_gone(pid);
        if (!gone || ::lstat(stale.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
            ++it;
            continue;
        }
        if (::unlink(stale.c_str()) == 0)
            log_info("removed " + stale + ", left by a writer that was killed (pid " + std::to_string(pid) + ")");
        it = names.erase(it);
    }
}

}  // namespace

void check_output_dir(const std::string& path) {
    const std::filesystem::path dir = dir_of(path);
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) throw Error(path, dir_fault(dir));
    // A directory the user may not write into (or a read-only file system) fails only when the
    // file is created, after the work.
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error(path, "cannot create the output in " + dir.string() + ": " + std::strerror(errno));
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
    check_replaceable_file(path_);
    remove_dead_writers_temporaries(path_);
    // O_EXCL: never write through something already at the temporary name (a stale file or a
    // link planted there); a counter keeps two writers of one process apart.
    static std::atomic<unsigned> counter{0};
    // Each name is armed before it is created, so a signal never finds the file there and
    // unwatched; one that lands on a name already taken removes what only a dead process of this
    // id (or a planted link, not its target) can have left.
    int fd = -1, err = 0;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        temp_ = sibling_path(path_, ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
        own_temporary(temp_, true);
        cleanup_.arm(temp_, false);
        fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        err = errno;
        if (fd < 0) own_temporary(temp_, false);
        if (fd < 0 && err != EEXIST) break;
    }
    if (fd >= 0) {
        f_ = ::fdopen(fd, "wb");
        err = errno;
    }
    if (!f_) {
        if (fd >= 0) {
            ::close(fd);
            std::remove(temp_.c_str());
            own_temporary(temp_, false);
        }
        cleanup_.disarm();
        throw Error(path_, create_fault(path_, err));
    }
}

AtomicFile::~AtomicFile() {
    own_temporary(temp_, false);
    if (!f_) return;
    std::fclose(f_);
    std::remove(temp_.c_str());
    cleanup_.disarm();
}

void AtomicFile::write(const void* data, size_t bytes) {
    if (bytes && std::fwrite(data, 1, bytes, f_) != bytes)
        throw Error(path_, std::string("write failed: ") + std::strerror(errno));
}

void AtomicFile::write_at(long offset, const void* data, size_t bytes) {
    const long end = std::ftell(f_);
    if (end < 0 || std::fseek(f_, offset, SEEK_SET) != 0)
        throw Error(path_, std::string("seek failed: ") + std::strerror(errno));
    write(data, bytes);
    // The seek back flushes the bytes just written: where it fails, so did their write, and the
    // stream keeps no trace of it that commit() would see.
    if (std::fseek(f_, end, SEEK_SET) != 0) throw Error(path_, std::string("write failed: ") + std::strerror(errno));
}

void AtomicFile::sync() {
    if (std::fflush(f_) != 0 || fsync(fileno(f_)) != 0)
        throw Error(path_, std::string("cannot finish writing: ") + std::strerror(errno));
}

void AtomicFile::commit() {
    FILE* f = f_;
    f_ = nullptr;
    // The errno of the call that failed: fclose's own failure (a delayed write error, a quota
    // reached at close on a network file system) comes after calls that succeeded.
    bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = errno;
    if (std::fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        std::remove(temp_.c_str());
        cleanup_.disarm();
        throw Error(path_, std::string("cannot finish writing: ") + std::strerror(err));
    }
    // The target may have changed kind while the file was written (a long encode).
    try {
        check_replaceable_file(path_);
    } catch (...) {
        std::remove(temp_.c_str());
        cleanup_.disarm();
        throw;
    }
    const bool renamed = std::rename(temp_.c_str(), path_.c_str()) == 0;
    err = errno;
    cleanup_.disarm();
    if (renamed) return sync_parent_dir(path_);
    std::remove(temp_.c_str());
    throw Error(path_, std::string("cannot finish writing: ") + std::strerror(err));
}

void sync_parent_dir(const std::string& path) {
    const std::string dir = dir_of(path).string();
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;  // a directory one may write but not read: nothing more can be done
    const bool ok = ::fsync(fd) == 0 || errno == EINVAL;
    const int err = errno;
    ::close(fd);
    if (!ok) throw Error(dir, std::string("cannot make its entries durable (fsync): ") + std::strerror(err));
}

void write_file_atomically(const std::string& path, std::string_view content) {
    AtomicFile f(path);
    f.write(content);
    f.commit();
}

}  // namespace sixnd
