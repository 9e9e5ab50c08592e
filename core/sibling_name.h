// The name of a temporary sibling (a file or directory written beside an output and renamed into
// its place, or an earlier output moved aside): the output's name plus a suffix, in the same
// directory. A name is at most NAME_MAX (255) bytes on Linux file systems, so an output whose
// name leaves no room for the suffix would fail at its temporary name although the name itself
// is fine; its name is then cut (at a UTF-8 character boundary) to make room. The same name and
// suffix always give the same sibling, so a scan for stale siblings finds them with it.
#pragma once
#include <string>
#include <string_view>

namespace sixnd {

constexpr size_t kNameMax = 255;

// name + suffix, name cut so that the result fits kNameMax (suffix must be shorter than that).
std::string sibling_name(const std::string& name, const std::string& suffix);

// The same for a path: its last component gets the suffix, the directory stays.
std::string sibling_path(const std::string& path, const std::string& suffix);

// The pid that `digits`, the end of a sibling's name, stands for, or -1 when it can be none: not
// a number as std::to_string writes one, or above the kernel's ceiling on pids (PID_MAX_LIMIT,
// 2^22). A larger number is one a user gave (a backup "data.old-20250101"), and what it names
// is never tidied away.
long sibling_pid_value(std::string_view digits);

// Whether the process whose pid names a sibling has ended, so that what it left may be tidied:
// no process has the pid. One of another user (kill says EPERM) is alive.
bool writer_gone(long pid);

}  // namespace sixnd
