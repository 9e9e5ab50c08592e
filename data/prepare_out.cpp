#include "data/prepare_out.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "core/sibling_name.h"

namespace sixnd::data {

namespace fs = std::filesystem;

namespace {

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// train_000000.bin, val_000123.bin: the shard names data/output.cpp gives (six digits or more).
bool is_shard_name(const std::string& name) {
    for (const char* split : {"train_", "val_"}) {
        size_t n = std::strlen(split);
        if (name.size() >= n + 6 + 4 && name.compare(0, n, split) == 0 && all_digits(name.substr(n, name.size() - n - 4)) &&
            name.compare(name.size() - 4, 4, ".bin") == 0)
            return true;
    }
    return false;
}

// What a run puts in its partial directory: the finished names plus scratch and temporary files.
bool is_partial_entry(const std::string& name) {
    return name == "manifest.json" || name == "signatures.tmp" || name == "tokens.tmp" || is_shard_name(name) ||
           name.find(".tmp.") != std::string::npos;
}

// The first entry of dir that is not a regular file accepted by `allowed`, or "" when none.
template <class Allowed>
std::string foreign_entry(const std::string& dir, Allowed allowed) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (!allowed(name) || !it->is_regular_file(ec) || it->is_symlink(ec)) return name;
    }
    if (ec) return "(unreadable: " + ec.message() + ")";
    return "";
}

bool strictly_inside(const fs::path& inner, const fs::path& outer) {
    auto i = inner.begin(), o = outer.begin();
    for (; o != outer.end(); ++o, ++i)
        if (i == inner.end() || *i != *o) return false;
    return i != inner.end();
}

// Calls f(path, pid text, is_old) for each OUT.partial-PID / OUT.old-PID directory beside out
// whose process no longer exists; warn_running names those of running processes in the log.
template <class F>
void for_each_dead_sibling(const std::string& out, bool warn_running, F f) {
    fs::path target(out);
    fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
    const std::string base = target.filename().string();
    std::error_code ec;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::string pid_text;
        bool old = false;
        for (const auto& [tag, is_old] : {std::pair<std::string, bool>{".partial-", false}, {".old-", true}}) {
            const size_t at = name.rfind(tag);
            if (at == std::string::npos) continue;
            const std::string digits = name.substr(at + tag.size());
            if (name == sibling_name(base, tag + digits)) {
                pid_text = digits;
                old = is_old;
            }
        }
        if (!all_digits(pid_text) || pid_text.size() > 9 || it->is_symlink(ec) || !it->is_directory(ec)) continue;
        const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
        const std::string path = it->path().string();
        if (pid == ::getpid()) continue;
        if (::kill(pid, 0) == 0 || errno == EPERM) {
            if (warn_running) log_warn(path + " belongs to a running process (pid " + pid_text + "); left alone");
            continue;
        }
        f(path, pid_text, old);
    }
}

}  // namespace

bool is_data_output_dir(const std::string& dir) {
    std::string manifest = dir + "/manifest.json";
    struct stat st;
    if (::stat(manifest.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) return false;
    try {
        auto j = nlohmann::json::parse(read_whole_file(manifest), nullptr, false);
        return j.is_object() && j.value("format", "") == "sixnd data manifest";
    } catch (const Error&) {
        return false;
    }
}

void check_output_dir(const std::string& out, bool overwrite) {
    if (out.empty()) throw Error("--out", "no output directory given");
    struct stat st;
    if (::lstat(out.c_str(), &st) != 0) {
        if (errno == ENOENT) return;
        throw Error("--out", out + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        throw Error("--out", out + " exists and is " + file_kind(st.st_mode) +
                                 ", not a directory sixnd data prepare wrote; refusing to replace it");
    if (!overwrite) throw Error("--out", out + " already exists (pass --overwrite to replace it)");
    if (!is_data_output_dir(out))
        throw Error("--out", out + " holds no sixnd data manifest, so it is not an earlier output; --overwrite "
                                   "replaces only those (remove it yourself if it should go)");
    std::string odd = foreign_entry(out, [](const std::string& n) { return n == "manifest.json" || is_shard_name(n); });
    if (!odd.empty())
        throw Error("--out", out + " holds '" + odd + "', which sixnd data prepare does not write; refusing to delete it "
                                   "with --overwrite (move it away first)");
}

void check_no_overlap(const std::string& out, const std::vector<NamedPath>& inputs) {
    std::error_code ec;
    fs::path o = fs::weakly_canonical(fs::absolute(out, ec), ec);
    if (ec) return;
    for (const auto& in : inputs) {
        fs::path p = fs::weakly_canonical(fs::absolute(in.path, ec), ec);
        if (ec) continue;
        const char* how = p == o ? "is" : strictly_inside(p, o) ? "contains" : strictly_inside(o, p) ? "is inside" : nullptr;
        if (how)
            throw Error("--out", out + " " + how + " " + in.what + " " + in.path +
                                     "; the output must lie outside everything the run reads");
    }
}

void restore_moved_aside(const std::string& out) {
    struct stat st;
    if (::lstat(out.c_str(), &st) == 0 || errno != ENOENT) return;
    // Quiet about running processes' directories: remove_stale_partials names them after the checks.
    for_each_dead_sibling(out, false, [&](const std::string& path, const std::string& pid_text, bool old) {
        if (!old || ::lstat(out.c_str(), &st) == 0) return;
        if (::rename(path.c_str(), out.c_str()) == 0)
            log_info("put back " + out + " from " + path + ", moved aside by a run that was killed (pid " + pid_text + ")");
        else
            log_warn("cannot put back " + out + " from " + path + ": " + std::strerror(errno));
    });
}

void remove_stale_partials(const std::string& out) {
    for_each_dead_sibling(out, true, [](const std::string& path, const std::string& pid_text, bool) {
        std::string odd = foreign_entry(path, is_partial_entry);
        if (!odd.empty()) {
            log_warn(path + " was left by a run that no longer exists but holds '" + odd + "'; left alone");
            return;
        }
        std::error_code rm;
        fs::remove_all(path, rm);
        if (rm)
            log_warn("cannot remove " + path + " (left by a killed run): " + rm.message());
        else
            log_info("removed " + path + ", left by a run that was killed (pid " + pid_text + " no longer exists)");
    });
}

PartialDir::PartialDir(std::string path) : path_(std::move(path)) {
    std::error_code ec;
    fs::remove_all(path_, ec);  // named by this process's id: only a dead earlier process can have left it
    // Armed first: a signal between creating the directory and arming would leave it behind.
    cleanup_.arm(path_, true);
    if (!fs::create_directory(path_, ec)) throw Error("--out", "cannot create " + path_ + ": " + ec.message());
}

PartialDir::~PartialDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);  // still armed: a signal meanwhile finishes the job
    cleanup_.disarm();
}

void PartialDir::commit(const std::string& out, bool overwrite) {
    std::error_code ec;
    struct stat st;
    if (::lstat(out.c_str(), &st) == 0) {
        check_output_dir(out, overwrite);  // again: the run took a while
        // One atomic swap where the filesystem has it: out is never absent, and the old output,
        // now at path_ and still armed, goes as a partial would.
        if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0) {
            fs::remove_all(path_, ec);
        } else {
            // Otherwise two renames; a run killed between them leaves out.old-PID, which the next
            // run puts back (restore_moved_aside).
            const std::string old = sibling_path(out, ".old-" + std::to_string(::getpid()));
            fs::rename(out, old, ec);
            if (ec) throw Error("--out", "cannot move the old " + out + " aside: " + ec.message());
            fs::rename(path_, out, ec);
            if (ec) {
                std::error_code back;
                fs::rename(old, out, back);
                throw Error("--out", "cannot rename " + path_ + " to " + out + ": " + ec.message());
            }
            fs::remove_all(old, ec);
        }
    } else {
        fs::rename(path_, out, ec);
        if (ec) throw Error("--out", "cannot rename " + path_ + " to " + out + ": " + ec.message());
    }
    cleanup_.disarm();
    path_.clear();
}

}  // namespace sixnd::data
