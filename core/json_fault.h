// What is wrong with a JSON document, for a message that names the file: nlohmann's text
// without its "[json.exception.parse_error.101] parse error at " opening, which names the
// library's exception class rather than the fault. So "line 1, column 3: syntax error while
// parsing value - invalid literal; last read: '{x'", or "key 'step' not found".
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace sixnd {

inline std::string json_fault(const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (what.rfind("[json.exception.", 0) == 0) {
        const size_t end = what.find("] ");
        if (end != std::string::npos) what.erase(0, end + 2);
    }
    for (const char* opening : {"parse error at ", "parse error: "})
        if (what.rfind(opening, 0) == 0) return what.substr(std::string(opening).size());
    return what;
}

}  // namespace sixnd
