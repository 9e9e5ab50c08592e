// The bill of a run: wall-clock time, device-hours, FLOPs done (model and hardware), MFU and HFU
// over the whole run (wall-clock, so evaluation, checkpoints and start-up count against it),
// and dollars at --price-per-device-hour when given. Every run ends with it as a `bill` event
// in the run log and one summary line.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace sixnd {

struct Bill {
    double wall_s = 0;
    int devices = 1;
    double model_flops = 0, hw_flops = 0;
    double peak_flops = 0;               // per device
    double price_per_device_hour = 0;    // 0: no price given

    double device_hours() const { return wall_s * devices / 3600; }
    double mfu() const;
    double hfu() const;
    double dollars() const { return device_hours() * price_per_device_hour; }
    nlohmann::json to_json() const;
    std::string summary() const;
};

}  // namespace sixnd
