// A number as the shortest decimal text (of 6 significant digits or more, so that 100 stays
// "100", not "1e+02") that reads back as the same value: what a recorded setting or a suggested
// command should carry (0.003, not 0.0030000000260770321; 1.23456789, not a stream's 1.23457).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sixnd {

// as_float: v is a float option's value, and the text need only read back as that float.
inline std::string shortest_number(double v, bool as_float = false) {
    char text[32];
    for (int digits = 6; digits <= 17; digits++) {
        std::snprintf(text, sizeof text, "%.*g", digits, v);
        if (as_float ? std::strtof(text, nullptr) == static_cast<float>(v) : std::strtod(text, nullptr) == v) break;
    }
    return text;
}

// A float as the double of its shortest decimal (0.9, not 0.8999999761581421): a float setting
// recorded in JSON as the number it was given as.
inline double float_as_decimal(float v) { return std::strtod(shortest_number(v, true).c_str(), nullptr); }

}  // namespace sixnd
