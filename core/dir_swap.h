// Replacing an output directory by a finished one built beside it, and tidying up after writers
// of it that were killed. A writer of OUT uses two siblings named by OUT's name, a suffix and its
// pid (cut to fit: core/sibling_name.h): the staging directory it builds the new output in, and
// the aside directory that holds the earlier OUT for the moment between two renames, where the
// file system cannot swap two directories in one step.
//
// A writer killed with SIGKILL (or a crash) can leave either behind, and one killed between the
// two renames leaves OUT missing and the earlier output aside; the next writer of OUT puts that
// back (restore_aside) and removes the rest (remove_stale_siblings). Siblings whose process is
// still running are never touched.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace sixnd {

struct OutSiblings {
    std::filesystem::path out;
    std::string prefix;          // put before OUT's name: "." hides the siblings
    std::string staging_suffix;  // then one of these and the pid: ".partial-", ".export-tmp."
    std::string aside_suffix;    // ".old-", ".export-old."

    std::filesystem::path staging() const;  // this process's
    std::filesystem::path aside() const;
};

// Puts back OUT from an aside sibling of a process that no longer exists, when OUT is missing.
void restore_aside(const OutSiblings& s);

// Removes the staging and aside siblings of processes that no longer exist, naming each in the
// log. Left alone, with a log line: those of running processes, and one in which foreign(dir)
// finds an entry the writer does not make (it returns the entry's name, or "" when there is none).
void remove_stale_siblings(const OutSiblings& s, const std::function<std::string(const std::string&)>& foreign);

// Puts the finished directory s.staging() in place of s.out (absent, or a directory): one atomic
// exchange where the file system has it, after which the earlier output is at s.staging() and is
// removed; else two renames through s.aside(), with SIGINT, SIGTERM and SIGHUP held back between
// them (core/signal_block.h). Throws Error(out, ...) naming `what` ("export") when a rename fails,
// with OUT as it was.
void replace_dir(const OutSiblings& s, const std::string& what);

}  // namespace sixnd
