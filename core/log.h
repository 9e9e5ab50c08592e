// Logging to stderr with a level; stdout is kept for results (JSON lines, samples).
#pragma once
#include <string>

namespace sixnd {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log(LogLevel level, const std::string& msg);
inline void log_info(const std::string& msg) { log(LogLevel::info, msg); }
inline void log_warn(const std::string& msg) { log(LogLevel::warn, msg); }
inline void log_debug(const std::string& msg) { log(LogLevel::debug, msg); }

}  // namespace sixnd
