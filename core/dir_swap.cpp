#include "core/dir_swap.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"
#include "core/digits.h"
#include "core/error.h"
#include "core/log.h"
#include "core/signal_block.h"
#include "core/sibling_name.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

std::string sibling_leaf(const OutSiblings& s, const std::string& suffix, const std::string& pid) {
    return sibling_name(s.prefix + s.out.filename().string(), suffix + pid);
}

// The pid in name when name is one of s's siblings (*aside says which kind), else "".
std::string sibling_pid(const OutSiblings& s, const std::string& name, bool* aside) {
    for (const auto& [suffix, is_aside] : {std::pair<const std::string&, bool>{s.staging_suffix, false}, {s.aside_suffix, true}}) {
        const std::string digits(digits_after(name, suffix));
        if (sibling_pid_value(digits) >= 0 && name == sibling_leaf(s, suffix, digits)) {
            *aside = is_aside;
            return digits;
        }
    }
    return "";
}

// Calls f(path, pid text, is_aside) for each staging or aside directory of s whose process no
// longer exists; warn_running names those of running processes in the log.
template <class F>
void for_each_dead_sibling(const OutSiblings& s, bool warn_running, F f) {
    const fs::path parent = s.out.parent_path().empty() ? fs::path(".") : s.out.parent_path();
    std::error_code ec, kind;
    for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        bool aside = false;
        const std::string pid_text = sibling_pid(s, it->path().filename().string(), &aside);
        if (pid_text.empty() || it->is_symlink(kind) || !it->is_directory(kind)) continue;
        const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
        if (pid == ::getpid()) continue;
        const std::string path = it->path().string();
        if (!writer_gone(pid)) {
            if (warn_running) log_warn(path + " belongs to a running process (pid " + pid_text + "); left alone");
            continue;
        }
        f(path, pid_text, aside);
    }
}

void rename_or_throw(const fs::path& from, const fs::path& to, const fs::path& out, const std::string& fault) {
    if (::rename(from.c_str(), to.c_str()) != 0) throw Error(out.string(), fault + ": " + std::strerror(errno));
}

}  // namespace

fs::path OutSiblings::staging() const { return out.parent_path() / sibling_leaf(*this, staging_suffix, std::to_string(::getpid())); }

fs::path OutSiblings::aside() const { return out.parent_path() / sibling_leaf(*this, aside_suffix, std::to_string(::getpid())); }

void restore_aside(const OutSiblings& s) {
    struct stat st;
    if (::lstat(s.out.c_str(), &st) == 0 || errno != ENOENT) return;
    // Quiet about running processes' siblings: remove_stale_siblings names them.
    for_each_dead_sibling(s, false, [&](const std::string& path, const std::string& pid_text, bool aside) {
        if (!aside || ::lstat(s.out.c_str(), &st) == 0) return;
        if (::rename(path.c_str(), s.out.c_str()) == 0)
            log_info("put back " + s.out.string() + " from " + path + ", moved aside by a run that was killed (pid " + pid_text + ")");
        else
            log_warn("cannot put back " + s.out.string() + " from " + path + ": " + std::strerror(errno));
    });
}

void remove_stale_siblings(const OutSiblings& s, const std::function<std::string(const std::string&)>& foreign) {
    for_each_dead_sibling(s, true, [&](const std::string& path, const std::string& pid_text, bool) {
        const std::string odd = foreign(path);
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

void replace_dir(const OutSiblings& s, const std::string& what) {
    const fs::path staging = s.staging(), aside = s.aside();
    fs::path earlier;  // where the earlier output ends up
    {
        SignalBlock block;
        struct stat st;
        if (::lstat(s.out.c_str(), &st) != 0) {
            rename_or_throw(staging, s.out, s.out, "cannot rename the " + what + " into place");
        } else if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, s.out.c_str(), RENAME_EXCHANGE) == 0) {
            earlier = staging;
        } else {
            rename_or_throw(s.out, aside, s.out, "cannot move the earlier " + what + " aside");
            try {
                rename_or_throw(staging, s.out, s.out, "cannot rename the " + what + " into place");
            } catch (const Error&) {
                ::rename(aside.c_str(), s.out.c_str());
                throw;
            }
            earlier = aside;
        }
    }
    sync_parent_dir(s.out.string());
    // A signal from here on leaves the earlier output to the caller's cleanup of staging(), or, as
    // an aside beside the new OUT, to the next run's remove_stale_siblings.
    std::error_code ignore;
    if (!earlier.empty()) fs::remove_all(earlier, ignore);
}

}  // namespace sixnd
