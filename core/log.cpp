#include "core/log.h"

#include <atomic>
#include <cstdio>

namespace sixnd {

static std::atomic<int> g_level{static_cast<int>(LogLevel::info)};

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

void log(LogLevel level, const std::string& msg) {
    if (static_cast<int>(level) < g_level.load()) return;
    static const char* names[] = {"debug", "info", "warn", "error"};
    std::fprintf(stderr, "[sixnd %s] %s\n", names[static_cast<int>(level)], msg.c_str());
}

}  // namespace sixnd
