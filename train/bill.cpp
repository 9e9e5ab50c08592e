#include "train/bill.h"

#include <cstdio>

namespace sixnd {

double Bill::mfu() const { return wall_s > 0 && peak_flops > 0 ? model_flops / (wall_s * devices * peak_flops) : 0; }
double Bill::hfu() const { return wall_s > 0 && peak_flops > 0 ? hw_flops / (wall_s * devices * peak_flops) : 0; }

nlohmann::json Bill::to_json() const {
    nlohmann::json j{{"wall_s", wall_s},           {"devices", devices},     {"device_hours", device_hours()},
                     {"model_flops", model_flops}, {"hw_flops", hw_flops},   {"mfu", mfu()},
                     {"hfu", hfu()},               {"peak_flops", peak_flops}};
    if (price_per_device_hour > 0) {
        j["price_per_device_hour"] = price_per_device_hour;
        j["dollars"] = dollars();
    }
    return j;
}

std::string Bill::summary() const {
    char buf[320];
    std::snprintf(buf, sizeof buf, "bill: %.1f s wall-clock on %d device%s = %.4g device-hours, %.3g FLOPs (%.3g hardware), MFU %.1f%%, HFU %.1f%%",
                  wall_s, devices, devices == 1 ? "" : "s", device_hours(), model_flops, hw_flops, mfu() * 100, hfu() * 100);
    std::string s = buf;
    if (price_per_device_hour > 0) {
        std::snprintf(buf, sizeof buf, ", $%.4g at $%.4g per device-hour", dollars(), price_per_device_hour);
        s += buf;
    }
    return s;
}

}  // namespace sixnd
