// The JSON Lines run log (--log FILE): a header record (config, build, device, the peak FLOP/s
// MFU is measured against), one record per step, and event records (eval, checkpoint, skip,
// spike, stop). Each line is written whole as it comes, so a crashed run still has its history,
// and the file only ever ends in a complete record: a failed write (disk full, file too large)
// is cut back off before the error is thrown, and a torn last line left by a killed run is cut
// off (with a warning) when a resumed run opens the log to append. The file is locked for the
// run (one log, one run; a device such as /dev/null is no one run's and is not locked), and an
// existing file that is not empty and not a run log (a shard, a tokenizer, a config or
// checkpoint file named by mistake) is refused. A fresh run replaces an earlier run's log only
// when that run wrote into the same --out, or the log lies inside it (starting fresh there
// starts its history afresh), or with --overwrite: another directory's history is not lost to a
// mistyped --log.
#pragma once
#include <sys/types.h>

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/check.h"

namespace sixnd {

// Whether a record is a run log's header: the first record of every log RunLog writes, and of
// every segment a resume appends.
bool is_run_log_header(const nlohmann::json& record);

// Calls on_record with each record of the run log at path, in order: the one reading of the
// format for every verb that reads run logs (plan --check, report, ablate). A file whose first
// record is not a header is something else named by mistake (a tokenizer, a shard, a
// results.json): an error naming it. A line that is not JSON is a write torn by a kill when it is
// the last (skipped with a warning, as a resume cuts it off) and damage anywhere else: an error
// naming FILE:LINE.
void read_run_log(const std::string& path, const std::function<void(const plan::LogRecord&)>& on_record);

// Whose the log is: a resumed run appends to its log; a fresh run writing into out_dir replaces
// one as the class comment says.
struct RunLogOwner {
    bool append = false;
    std::string out_dir;
    bool overwrite = false;
};

// Throws the Error a run's RunLog(path, owner) would, writing nothing and reading only path's
// first line (sixnd train --check): a directory, a missing or unwritable directory to create it
// in (other than owner.out_dir, which the run makes first), a file that is no run log or another
// run's.
void check_run_log_path(const std::string& path, const RunLogOwner& owner);

class RunLog {
public:
    // An empty path makes a disabled log (writes are dropped).
    RunLog(const std::string& path, const RunLogOwner& owner);
    ~RunLog();
    RunLog(const RunLog&) = delete;
    RunLog& operator=(const RunLog&) = delete;

    bool enabled() const { return fd_ >= 0; }
    void write(const nlohmann::json& record);
    void event(const std::string& name, int step, nlohmann::json fields = nlohmann::json::object());

private:
    std::string path_;
    int fd_ = -1;
    off_t end_ = 0;  // where the last complete record ends
};

}  // namespace sixnd
