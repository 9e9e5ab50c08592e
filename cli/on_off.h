// "on"/"off" flag values, spelled the same way on every verb.
#pragma once
#include <string>

#include "core/error.h"

namespace sixnd::cli {

inline bool parse_on_off(const std::string& flag, const std::string& v) {
    if (v == "on") return true;
    if (v == "off") return false;
    throw Error(flag, "expected on or off, got '" + v + "'");
}

}  // namespace sixnd::cli
