#include "train/spike_options.h"

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/shortest_number.h"
#include "core/rng.h"
#include "core/split.h"

namespace sixnd {

SpikeAction parse_spike_action(const std::string& s) {
    if (s == "warn") return SpikeAction::warn;
    if (s == "skip") return SpikeAction::skip;
    if (s == "rollback") return SpikeAction::rollback;
    throw Error("--on-spike", "must be warn, skip or rollback, not '" + s + "'");
}

const char* spike_action_name(SpikeAction a) {
    switch (a) {
        case SpikeAction::skip: return "skip";
        case SpikeAction::rollback: return "rollback";
        default: return "warn";
    }
}

namespace {

// The whole of `s` as a number, or false.
bool whole_int(const std::string& s, int& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || v < -(1L << 30) || v > (1L << 30)) return false;
    out = static_cast<int>(v);
    return true;
}

bool whole_double(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return *end == '\0';
}

}  // namespace

LrInjection parse_lr_injection(const std::string& spec) {
    // A trailing colon makes an empty part: "200:30:" lacks its STEPS, it is not 200:30.
    const std::vector<std::string> parts = split_all(spec, ':');
    LrInjection l;
    const bool ok = (parts.size() == 2 || parts.size() == 3) && whole_int(parts[0], l.step) &&
                    whole_double(parts[1], l.factor) && (parts.size() == 2 || whole_int(parts[2], l.steps));
    if (!ok) throw Error("--inject-lr-spike", "expects STEP:FACTOR[:STEPS] (e.g. 200:30 or 200:30:5), got '" + spec + "'");
    if (l.step < 1) throw Error("--inject-lr-spike", "STEP must be 1 or more, got " + std::to_string(l.step));
    return l;
}

std::string lr_injection_text(const LrInjection& l) {
    if (l.step == 0) return "";
    // The factor as it was given: a stream's six digits recorded 1.23456789 as 1.23457, a factor
    // the run never used.
    return std::to_string(l.step) + ":" + shortest_number(l.factor) + ":" + std::to_string(l.steps);
}

void junk_row(uint64_t seed, int step, uint64_t row, int vocab, int32_t* out, size_t n) {
    Rng rng(mix64(seed ^ mix64(0x6a756e6bull + static_cast<uint64_t>(step))) ^ mix64(row + 1));
    for (size_t i = 0; i < n; i++) out[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab)));
}

}  // namespace sixnd
