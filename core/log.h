// Logging to stderr with a level, each message one line of valid UTF-8 (core/printable.h); stdout
// is kept for results (JSON lines, samples).
#pragma once
#include <string>

namespace sixnd {

enum class LogLevel { info, warn, error };

void log(LogLevel level, const std::string& msg);
inline void log_info(const std::string& msg) { log(LogLevel::info, msg); }
inline void log_warn(const std::string& msg) { log(LogLevel::warn, msg); }

}  // namespace sixnd
