// An output directory written whole or not at all (sixnd export's, sixnd report's). The work goes
// into a hidden sibling of OUT (.NAME.TAG-tmp.PID, cut to fit: core/sibling_name.h), removed
// unless committed, on SIGINT, SIGTERM and SIGHUP too (and, but for a signal, so are the missing
// parents of OUT it made); commit() puts it in place of an earlier OUT (core/dir_swap.h:
// atomically where the file system allows, else through a moved-aside .NAME.TAG-old.PID), so
// that a failure at any point leaves OUT as it was (or absent, as it was).
// Siblings left by a killed run of the same verb are dealt with when the next one starts: an
// earlier OUT it had moved aside is put back, the rest removed. The staging directory must be
// flat: the signal handler clears files only, and only flat siblings are reclaimed.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "core/dir_swap.h"
#include "core/signal_cleanup.h"

namespace sixnd {

// --out as a directory path: normalised, without a trailing '/'; Error("--out", ...) for a path
// that names no directory to create ("", ".", "..").
std::filesystem::path out_dir_path(const std::string& flag);

// Throws Error(out, ...) naming what out is ("a symbolic link", "a regular file", ...) and that
// `writer` did not write it: for an --out that exists and is not a directory. A link to a
// directory is one too: what replaces OUT would replace the link.
void refuse_non_directory_out(const std::filesystem::path& out, const std::string& writer);

class StagingDir {
public:
    // tag names the work in the siblings' names and in errors ("export", "report").
    StagingDir(const std::filesystem::path& out, const std::string& tag);
    ~StagingDir();
    StagingDir(const StagingDir&) = delete;
    StagingDir& operator=(const StagingDir&) = delete;

    const std::filesystem::path& out() const { return siblings_.out; }
    const std::filesystem::path& path() const { return path_; }
    void commit();

private:
    OutSiblings siblings_;
    std::filesystem::path path_;
    std::vector<std::filesystem::path> made_;  // path_ and the directories made on the way to it
    std::string tag_;
    SignalCleanup cleanup_;
    bool committed_ = false;
};

}  // namespace sixnd
