#include "core/log.h"

#include <cstdio>

namespace sixnd {

void log(LogLevel level, const std::string& msg) {
    static const char* names[] = {"info", "warn", "error"};
    std::fprintf(stderr, "[sixnd %s] %s\n", names[static_cast<int>(level)], msg.c_str());
}

}  // namespace sixnd
