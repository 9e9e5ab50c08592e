#include "core/log.h"

#include <cstdio>

#include "core/printable.h"

namespace sixnd {

// Through printable(), as main prints errors: a quoted file name with a newline or bytes that are
// not UTF-8 keeps the line one readable line.
void log(LogLevel level, const std::string& msg) {
    static const char* names[] = {"info", "warn", "error"};
    std::fprintf(stderr, "[sixnd %s] %s\n", names[static_cast<int>(level)], printable(msg).c_str());
}

}  // namespace sixnd
