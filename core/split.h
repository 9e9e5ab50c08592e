// Splits text at every separator, keeping empty parts ("a,,b," is four parts, the last empty),
// so that a caller sees a missing value instead of having it dropped as std::getline would.
#pragma once
#include <string>
#include <vector>

namespace sixnd {

inline std::vector<std::string> split_all(const std::string& text, char sep) {
    std::vector<std::string> parts;
    for (size_t begin = 0;;) {
        const size_t at = text.find(sep, begin);
        parts.push_back(text.substr(begin, at == std::string::npos ? std::string::npos : at - begin));
        if (at == std::string::npos) return parts;
        begin = at + 1;
    }
}

}  // namespace sixnd
