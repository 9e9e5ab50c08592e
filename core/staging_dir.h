// An output directory written whole or not at all (sixnd export's, sixnd report's). The work goes
// into a hidden sibling of OUT (.NAME.TAG-tmp.PID, cut to fit: core/sibling_name.h), removed
// unless committed, on SIGINT, SIGTERM and SIGHUP too; commit() moves an earlier OUT aside,
// renames the staging directory into its place, and only then removes the earlier one, so that a
// failure at any point leaves OUT as it was (or absent, as it was). The staging directory must be
// flat: the signal handler clears files only.
#pragma once
#include <filesystem>
#include <string>

#include "core/signal_cleanup.h"

namespace sixnd {

// --out as a directory path: normalised, without a trailing '/'; Error("--out", ...) for a path
// that names no directory to create ("", ".", "..").
std::filesystem::path out_dir_path(const std::string& flag);

class StagingDir {
public:
    // tag names the work in the sibling's name and in errors ("export", "report").
    StagingDir(const std::filesystem::path& out, const std::string& tag);
    ~StagingDir();
    StagingDir(const StagingDir&) = delete;
    StagingDir& operator=(const StagingDir&) = delete;

    const std::filesystem::path& out() const { return out_; }
    const std::filesystem::path& path() const { return path_; }
    void commit();

private:
    std::filesystem::path sibling(const std::string& kind) const;
    std::filesystem::path out_, path_;
    std::string tag_;
    SignalCleanup cleanup_;
    bool committed_ = false;
};

}  // namespace sixnd
