#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sixnd {

float Schedule::lr_at(int step) const {
    if (step < warmup) return lr * static_cast<float>(step + 1) / static_cast<float>(warmup);
    const float lo = lr * final_frac;
    const int span = std::max(1, total_steps - warmup);
    switch (kind) {
        case ScheduleKind::constant: return lr;
        case ScheduleKind::cosine: {
            double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
            return lo + static_cast<float>(0.5 * (1.0 + std::cos(M_PI * progress))) * (lr - lo);
        }
        case ScheduleKind::wsd: {
            const int decay_steps = std::max(1, static_cast<int>(std::lround(decay_frac * span)));
            const int decay_start = total_steps - decay_steps;
            if (step < decay_start) return lr;
            double progress = std::min(1.0, static_cast<double>(step - decay_start) / decay_steps);
            return lr + static_cast<float>(progress) * (lo - lr);
        }
    }
    return lr;
}

ScheduleKind parse_schedule(const std::string& s) {
    if (s == "constant") return ScheduleKind::constant;
    if (s == "cosine") return ScheduleKind::cosine;
    if (s == "wsd") return ScheduleKind::wsd;
    throw Error("--schedule", "unknown schedule '" + s + "' (expected constant, cosine or wsd)");
}

const char* schedule_name(ScheduleKind k) {
    switch (k) {
        case ScheduleKind::constant: return "constant";
        case ScheduleKind::cosine: return "cosine";
        case ScheduleKind::wsd: return "wsd";
    }
    return "?";
}

}  // namespace sixnd
