#include "train/run_log.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace sixnd {

RunLog::RunLog(const std::string& path, bool append) : path_(path) {
    if (path.empty()) return;
    f_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!f_) throw Error(path, std::string("cannot open run log: ") + std::strerror(errno));
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
