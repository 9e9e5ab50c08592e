#include "data/mixing.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace sixnd::data {

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
    size_t colon = s.pattern.rfind(':');
    if (colon != std::string::npos) {
        const char* w = s.pattern.c_str() + colon + 1;
        char* end = nullptr;
        double v = std::strtod(w, &end);
        if (end != w && *end == '\0') {
            if (!(v >= 0) || !std::isfinite(v)) throw Error("--source", "weight of '" + s.name + "' must be a number >= 0");
            s.weight = v;
            s.pattern.resize(colon);
        }
    }
    if (s.pattern.empty()) throw Error("--source", "'" + spec + "' names no files");
    return s;
}

double unit_hash(uint64_t doc_hash, uint64_t seed) {
    uint64_t z = doc_hash ^ (seed * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

uint32_t mix_copies(double weight, uint64_t doc_hash, uint64_t seed) {
    double whole = std::floor(weight);
    return static_cast<uint32_t>(whole) + (unit_hash(doc_hash, seed) < weight - whole ? 1u : 0u);
}

}  // namespace sixnd::data
