// A flag taking an unsigned 64-bit value (a seed): decimal digits only, at most 2^64-1. CLI11
// alone would wrap "-1" and saturate larger values into a seed nobody asked for.
#pragma once
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace sixnd::cli {

inline CLI::Validator uint64_value() {
    return CLI::Validator(
        [](std::string& s) -> std::string {
            if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
                return "must be a whole number from 0 to 18446744073709551615, got '" + s + "'";
            errno = 0;
            std::strtoull(s.c_str(), nullptr, 10);
            if (errno == ERANGE) return s + " is above 18446744073709551615 (2^64-1)";
            return "";
        },
        "UINT64");
}

}  // namespace sixnd::cli
