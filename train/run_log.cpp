#include "train/run_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/json_fault.h"
#include "core/log.h"

namespace sixnd {

namespace {

// The first line of an existing regular file, if it is a run log's header record (else null).
// The header lists every shard (a thousand of them pass 100 KiB), so the line is read to its
// end; a file that does not open with a JSON object (a shard, a checkpoint's tensors) is told at
// once.
nlohmann::json first_header(int fd) {
    std::string head;
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(head.size()));
        if (n <= 0) return nullptr;
        head.append(buf, static_cast<size_t>(n));
        if (head[0] != '{') return nullptr;
        const size_t eol = head.find('\n', head.size() - static_cast<size_t>(n));
        if (eol == std::string::npos) continue;
        nlohmann::json header = nlohmann::json::parse(head.substr(0, eol), nullptr, false);
        return is_run_log_header(header) ? header : nullptr;
    }
}

// The --out an earlier run recorded in its header ("" when it recorded none).
std::string recorded_out(const nlohmann::json& header) {
    const auto config = header.find("config");
    if (config == header.end() || !config->is_object()) return "";
    const auto out = config->find("out");
    return out != config->end() && out->is_string() ? out->get<std::string>() : "";
}

// Whether a fresh run into out_dir may replace the log at path that a run into earlier_out
// wrote: the same directory, however spelt, or a log kept inside out_dir.
bool log_belongs_to(const std::string& path, const std::string& earlier_out, const std::string& out_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path out = fs::weakly_canonical(fs::absolute(out_dir, ec), ec);
    if (ec) return false;
    if (!earlier_out.empty() && fs::weakly_canonical(fs::absolute(earlier_out, ec), ec) == out && !ec) return true;
    const fs::path rel = fs::weakly_canonical(fs::absolute(path, ec), ec).lexically_relative(out);
    return !ec && !rel.empty() && *rel.begin() != "..";
}

// Why a run must not write the existing regular file (fd, size > 0) at path as its log, or "":
// a --log that names a shard, the tokenizer, a config file or a checkpoint's file would be
// overwritten (or appended to), so it must be a run log, and a fresh run replaces only its own.
std::string foreign_log_fault(int fd, const std::string& path, const RunLogOwner& owner) {
    const nlohmann::json header = first_header(fd);
    if (header.is_null())
        return "exists and is not a sixnd run log (its first line is no header record): give a new file or an earlier run log";
    const std::string earlier_out = recorded_out(header);
    if (!owner.append && !owner.overwrite && !log_belongs_to(path, earlier_out, owner.out_dir))
        return "holds the log of a run into " + (earlier_out.empty() ? std::string("another --out") : earlier_out) +
               ", which a fresh run into " + owner.out_dir + " would replace: give this run its own --log, or pass --overwrite to replace it";
    return "";
}

std::string open_fault(int err) { return std::string("cannot open run log: ") + std::strerror(err); }

// Where the last complete line of a file of `size` bytes ends (just after its last newline; 0
// when it has none), or -1 when the file cannot be read.
off_t complete_end(int fd, off_t size) {
    char buf[1 << 16];
    for (off_t end = size; end > 0;) {
        const off_t start = end > off_t(sizeof buf) ? end - off_t(sizeof buf) : 0;
        if (pread(fd, buf, size_t(end - start), start) != end - start) return -1;
        for (off_t i = end - start; i-- > 0;)
            if (buf[i] == '\n') return start + i + 1;
        end = start;
    }
    return 0;
}

}  // namespace

bool is_run_log_header(const nlohmann::json& record) {
    return record.is_object() && record.value("type", nlohmann::json()) == "header";
}

void read_run_log(const std::string& path, const std::function<void(const plan::LogRecord&)>& on_record) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(st)) throw Error(path, "is a directory, not a run log (the file train's --log wrote)");
    // A device has no end (/dev/zero would be read until memory runs out); a pipe is read.
    if (std::filesystem::is_character_file(st) || std::filesystem::is_block_file(st)) throw Error(path, "is a device, not a run log");
    std::ifstream in(path);
    if (!in) throw Error(path, std::string("cannot open the run log: ") + std::strerror(errno));
    const std::string not_a_log = "not a sixnd run log (no header record): ";
    bool started = false;
    int torn = 0;  // the line number of a line that is not JSON
    std::string torn_fault, line;
    for (int n = 1; std::getline(in, line); n++) {
        if (line.empty()) continue;
        const std::string where = path + ":" + std::to_string(n);
        if (torn) throw Error(path + ":" + std::to_string(torn), "not a JSON record, and not the last line: " + torn_fault);
        plan::LogRecord rec{nlohmann::json(), n};
        try {
            rec.json = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            if (!started) throw Error(where, not_a_log + "the first line is not a JSON record: " + json_fault(e));
            torn = n;
            torn_fault = json_fault(e);
            continue;
        }
        if (!started && !is_run_log_header(rec.json)) throw Error(where, not_a_log + "the first record is not a header");
        started = true;
        on_record(rec);
    }
    if (!started) throw Error(path, not_a_log + "the file has no records");
    if (torn) log_warn(path + ":" + std::to_string(torn) + ": the last line is not a JSON record (a write torn by a kill); skipped");
}

void check_run_log_path(const std::string& path, const RunLogOwner& owner) {
    namespace fs = std::filesystem;
    if (path.empty()) return;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        if (err != ENOENT) throw Error(path, open_fault(err));
        // The run creates the file, in a directory that must be there by then: --out itself is
        // made before the log is opened.
        std::error_code ec;
        const fs::path dir = fs::absolute(path, ec).parent_path();
        if (fs::weakly_canonical(dir, ec) == fs::weakly_canonical(fs::absolute(owner.out_dir, ec), ec)) return;
        struct stat st {};
        if (stat(dir.c_str(), &st) != 0) throw Error(path, open_fault(errno));
        if (!S_ISDIR(st.st_mode)) throw Error(path, open_fault(ENOTDIR));
        if (access(dir.c_str(), W_OK | X_OK) != 0) throw Error(path, open_fault(errno));
        return;
    }
    struct stat st {};
    std::string fault;
    if (fstat(fd, &st) != 0) fault = std::string("cannot stat the run log: ") + std::strerror(errno);
    else if (S_ISDIR(st.st_mode)) fault = open_fault(EISDIR);
    else if (access(path.c_str(), W_OK) != 0) fault = open_fault(errno);
    else if (S_ISREG(st.st_mode) && st.st_size > 0) fault = foreign_log_fault(fd, path, owner);
    close(fd);
    if (!fault.empty()) throw Error(path, fault);
}

RunLog::RunLog(const std::string& path, const RunLogOwner& owner) : path_(path) {
    const bool append = owner.append;
    if (path.empty()) return;
    // Read and write: the first line is read back to tell a run log from anything else. Always
    // O_APPEND, so that a write after a failed one's cut lands at the cut, not beyond it.
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_APPEND, 0644);
    if (fd < 0) throw Error(path, open_fault(errno));
    auto refuse = [&](const std::string& fault) {
        close(fd);
        throw Error(path, fault);
    };
    struct stat st {};
    if (fstat(fd, &st) != 0) refuse(std::string("cannot stat the run log: ") + std::strerror(errno));
    // Held for the run: two runs appending to one log interleave their records. A device
    // (/dev/null, a terminal) is no one run's log: its lock would be every process's.
    // Only EWOULDBLOCK is another holder: a file system without locks (NFS without lockd) says
    // ENOLCK.
    if (!S_ISCHR(st.st_mode)) {
        if (flock(fd, LOCK_EX | LOCK_NB) != 0)
            refuse(errno == EWOULDBLOCK ? "the run log is in use by another sixnd train; give each run its own --log"
                                        : std::string("cannot lock the run log (flock): ") + std::strerror(errno));
        // Its size once no other run writes it.
        if (fstat(fd, &st) != 0) refuse(std::string("cannot stat the run log: ") + std::strerror(errno));
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        const std::string fault = foreign_log_fault(fd, path, owner);
        if (!fault.empty()) refuse(fault);
    }
    if (!append && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0)
        refuse(std::string("cannot truncate the run log: ") + std::strerror(errno));
    if (append && S_ISREG(st.st_mode) && st.st_size > 0) {
        // A run killed mid-record leaves half a line, which the header appended next would
        // join into one record that no reader accepts.
        end_ = complete_end(fd, st.st_size);
        if (end_ < 0) refuse(std::string("cannot read the run log: ") + std::strerror(errno));
        if (end_ < st.st_size) {
            if (ftruncate(fd, end_) != 0) refuse(std::string("cannot cut off its torn last record: ") + std::strerror(errno));
            log_warn(path + ": dropped a torn last record (" + std::to_string(st.st_size - end_) +
                     " bytes without a final newline, left by a killed or failed run)");
        }
    }
    fd_ = fd;
}

RunLog::~RunLog() {
    if (fd_ >= 0) close(fd_);
}

void RunLog::write(const nlohmann::json& record) {
    if (fd_ < 0) return;
    const std::string line = record.dump() + "\n";
    for (size_t done = 0; done < line.size();) {
        const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : EIO;
            // Half a record would end the log; should the cut fail too, a resume cuts it.
            (void)!ftruncate(fd_, end_);
            throw Error(path_, std::string("cannot write run log: ") + std::strerror(err));
        }
        done += size_t(n);
    }
    end_ += off_t(line.size());
}

void RunLog::event(const std::string& name, int step, nlohmann::json fields) {
    fields["type"] = "event";
    fields["event"] = name;
    fields["step"] = step;
    write(fields);
}

}  // namespace sixnd
