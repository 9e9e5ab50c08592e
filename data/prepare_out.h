// Where `sixnd data prepare` writes, and what it may touch there. The output is built in a
// sibling OUT.partial-PID (OUT's name cut to fit, core/sibling_name.h) and renamed into place at
// the end; these are the rules around that:
//
// - --out is either absent or a directory an earlier `data prepare` wrote (a sixnd data
//   manifest and its shards, nothing else). A symlink, a device node, a regular file or a
//   directory holding anything else is refused, with or without --overwrite: replacing it would
//   destroy what sixnd did not make.
// - --out must not overlap what the run reads: equal to, inside or around a source, the
//   tokenizer or an evaluation file. (With --overwrite the old output is deleted; inside a
//   source, the next run would read this run's shards as text.)
// - A partial directory is removed when the run fails, and on SIGINT/SIGTERM/SIGHUP too. A
//   partial (or a moved-aside .old-PID) left by a killed run whose process no longer exists is
//   removed at the next run's start, and named in the log; an .old-PID whose OUT is missing (the
//   run was killed between its two renames) is put back as OUT instead (core/dir_swap.h).
#pragma once
#include <string>
#include <vector>

#include "core/signal_cleanup.h"

namespace sixnd::data {

// True when dir holds a manifest.json whose format is "sixnd data manifest".
bool is_data_output_dir(const std::string& dir);

// Throws Error("--out", ...) unless out may be (re)placed: see the rules above.
void check_output_dir(const std::string& out, bool overwrite);

// Throws Error("--out", ...) when out overlaps one of the inputs (files or directories);
// `what` names each input for the message (e.g. "--source web", "--tokenizer").
struct NamedPath {
    std::string what, path;
};
void check_no_overlap(const std::string& out, const std::vector<NamedPath>& inputs);

// Puts back OUT from an OUT.old-PID of a run that no longer exists, when OUT itself is missing.
// Runs before the checks: it restores what the user had.
void restore_moved_aside(const std::string& out);

// Removes OUT.partial-PID / OUT.old-PID siblings left by runs that no longer exist.
void remove_stale_partials(const std::string& out);

// The partial directory of this run: created empty, removed by the destructor unless committed,
// and removed if the process is interrupted (core/signal_cleanup.h; the directory is flat, as
// that requires).
class PartialDir {
public:
    // This run's OUT.partial-PID.
    explicit PartialDir(const std::string& out);
    ~PartialDir();
    PartialDir(const PartialDir&) = delete;
    PartialDir& operator=(const PartialDir&) = delete;
    const std::string& path() const { return path_; }
    // Puts the finished directory in place of out (an earlier output, checked again first, is
    // replaced: core/dir_swap.h).
    void commit(const std::string& out, bool overwrite);

private:
    std::string path_;
    SignalCleanup cleanup_;
};

}  // namespace sixnd::data
