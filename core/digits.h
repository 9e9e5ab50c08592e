// Recognising the numbers sixnd puts in file names (pids of temporary siblings, shard indices)
// without std::isdigit, whose answer depends on the C locale for bytes above 0x7F.
#pragma once
#include <string_view>

namespace sixnd {

// One or more ASCII digits and nothing else.
inline bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// What follows the last `tag` in name when that is all digits ("123" for "out.partial-123" and
// ".partial-"), else "".
inline std::string_view digits_after(std::string_view name, std::string_view tag) {
    const size_t at = name.rfind(tag);
    if (at == std::string_view::npos) return {};
    const std::string_view rest = name.substr(at + tag.size());
    return all_digits(rest) ? rest : std::string_view{};
}

}  // namespace sixnd
