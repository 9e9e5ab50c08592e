#include "core/sibling_name.h"

#include <signal.h>

#include <cerrno>

#include "core/digits.h"

namespace sixnd {

std::string sibling_name(const std::string& name, const std::string& suffix) {
    if (name.size() + suffix.size() <= kNameMax || suffix.size() >= kNameMax) return name + suffix;
    size_t keep = kNameMax - suffix.size();
    // A UTF-8 continuation byte (10xxxxxx) is never the first byte kept out of a character.
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) keep--;
    return name.substr(0, keep) + suffix;
}

std::string sibling_path(const std::string& path, const std::string& suffix) {
    const size_t slash = path.find_last_of('/');
    const size_t start = slash == std::string::npos ? 0 : slash + 1;
    return path.substr(0, start) + sibling_name(path.substr(start), suffix);
}

long sibling_pid_value(std::string_view digits) {
    constexpr long kPidMaxLimit = 1L << 22;
    // std::to_string's spelling only: no leading zero.
    if (!all_digits(digits) || digits.size() > 7 || (digits[0] == '0' && digits.size() > 1)) return -1;
    const long pid = std::stol(std::string(digits));
    return pid <= kPidMaxLimit ? pid : -1;
}

bool writer_gone(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

}  // namespace sixnd
