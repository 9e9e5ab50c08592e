#include "train/run_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace sixnd {

namespace {

// The first line of an existing regular file, if it is a run log's header record.
bool starts_with_header(int fd) {
    std::string head(1 << 16, '\0');
    const ssize_t n = pread(fd, head.data(), head.size(), 0);
    if (n <= 0) return false;
    head.resize(static_cast<size_t>(n));
    const size_t eol = head.find('\n');
    if (eol == std::string::npos) return false;
    return is_run_log_header(nlohmann::json::parse(head.substr(0, eol), nullptr, false));
}

}  // namespace

bool is_run_log_header(const nlohmann::json& record) {
    return record.is_object() && record.value("type", nlohmann::json()) == "header";
}

RunLog::RunLog(const std::string& path, bool append) : path_(path) {
    if (path.empty()) return;
    // Read and write: the first line is read back to tell a run log from anything else.
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (append ? O_APPEND : 0), 0644);
    if (fd < 0) throw Error(path, std::string("cannot open run log: ") + std::strerror(errno));
    auto refuse = [&](const std::string& fault) {
        close(fd);
        throw Error(path, fault);
    };
    // Held for the run: two runs appending to one log interleave their records.
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) refuse("the run log is in use by another sixnd train; give each run its own --log");
    // A --log that names a shard, the tokenizer, a config file or a checkpoint's file would be
    // overwritten (or appended to): an existing regular file must be empty or a run log.
    struct stat st {};
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && !starts_with_header(fd))
        refuse("exists and is not a sixnd run log (its first line is no header record): give a new file or an earlier run log");
    if (!append && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)
        refuse(std::string("cannot truncate the run log: ") + std::strerror(errno));
    f_ = fdopen(fd, append ? "a" : "w");
    if (!f_) refuse(std::string("cannot open run log: ") + std::strerror(errno));
}

RunLog::~RunLog() {
    if (f_) std::fclose(f_);
}

void RunLog::write(const nlohmann::json& record) {
    if (!f_) return;
    const std::string line = record.dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
        throw Error(path_, std::string("cannot write run log: ") + std::strerror(errno));
}

void RunLog::event(const std::string& name, int step, nlohmann::json fields) {
    fields["type"] = "event";
    fields["event"] = name;
    fields["step"] = step;
    write(fields);
}

}  // namespace sixnd
