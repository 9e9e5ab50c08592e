#include "data/mixing.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/rng.h"
#include "data/shard.h"

namespace sixnd::data {

namespace {

constexpr double kMaxWeight = 1000;  // copies of each document; more only multiplies memory and disk

bool matches_files(const std::string& pattern) {
    try {
        return !expand_glob(pattern).empty();
    } catch (const Error&) {
        return false;
    }
}

}  // namespace

SourceSpec parse_source(const std::string& spec) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        throw Error("--source", "'" + spec + "' is not NAME=GLOB[:WEIGHT]");
    SourceSpec s;
    s.name = spec.substr(0, eq);
    for (char c : s.name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
            throw Error("--source", "source name '" + s.name + "' may hold only letters, digits, '_', '-' and '.'");
    s.pattern = spec.substr(eq + 1);
    // A trailing ":NUMBER" is the weight; a colon followed by anything else belongs to the path.
    // A tail without '/' that is not a number is a mistyped weight, unless the whole text names
    // existing files (a file name holding a colon).
    size_t colon = s.pattern.rfind(':');
    if (colon != std::string::npos) {
        const std::string tail = s.pattern.substr(colon + 1);
        const char* w = tail.c_str();
        char* end = nullptr;
        double v = std::strtod(w, &end);
        if (!tail.empty() && end != w && *end == '\0') {
            if (!(v >= 0) || !std::isfinite(v) || v > kMaxWeight)
                throw Error("--source", "weight of '" + s.name + "' must be a number from 0 to " +
                                            std::to_string(static_cast<int>(kMaxWeight)) + ", not '" + tail + "'");
            s.weight = v;
            s.pattern.resize(colon);
        } else if (tail.find('/') == std::string::npos && !matches_files(s.pattern)) {
            throw Error("--source", "weight '" + tail + "' of source '" + s.name + "' is not a number (NAME=GLOB[:WEIGHT])");
        }
    }
    if (s.pattern.empty()) throw Error("--source", "'" + spec + "' names no files");
    return s;
}

double unit_hash(uint64_t doc_hash, uint64_t seed) {
    return static_cast<double>(mix64(doc_hash ^ (seed * 0x9E3779B97F4A7C15ull)) >> 11) * 0x1.0p-53;
}

uint32_t mix_copies(double weight, uint64_t doc_hash, uint64_t seed) {
    double whole = std::floor(weight);
    return static_cast<uint32_t>(whole) + (unit_hash(doc_hash, seed) < weight - whole ? 1u : 0u);
}

}  // namespace sixnd::data
