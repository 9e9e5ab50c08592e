#include "plan/devices.h"

#include <algorithm>
#include <cctype>

namespace sixnd::plan {

const std::vector<DeviceSpec>& device_table() {
    // NVIDIA data sheets, dense (non-sparse) BF16 tensor-core figures.
    static const std::vector<DeviceSpec> table = {
        {"h100", "NVIDIA H100 SXM 80GB", 989e12, 3.35e12, 80e9, "H100 SXM data sheet: 989 TFLOP/s BF16 dense, 3.35 TB/s HBM3"},
        {"h200", "NVIDIA H200 SXM 141GB", 989e12, 4.8e12, 141e9, "H200 data sheet: 989 TFLOP/s BF16 dense, 4.8 TB/s HBM3e"},
        {"a100", "NVIDIA A100 SXM 80GB", 312e12, 2.0e12, 80e9, "A100 data sheet: 312 TFLOP/s BF16 dense, 2.0 TB/s HBM2e (80GB)"},
        {"a100-40gb", "NVIDIA A100 SXM 40GB", 312e12, 1.555e12, 40e9, "A100 data sheet: 312 TFLOP/s BF16 dense, 1.555 TB/s HBM2 (40GB)"},
        {"b200", "NVIDIA B200 (HGX, 1000 W)", 2.25e15, 8e12, 192e9, "B200 HGX: 2.25 PFLOP/s BF16 dense (4.5 sparse), 8 TB/s HBM3e"},
    };
    return table;
}

static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

const DeviceSpec* find_device(const std::string& key_or_name) {
    const std::string k = lower(key_or_name);
    for (const auto& d : device_table())
        if (k == d.key) return &d;
    // A CUDA name: "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200".
    auto has = [&](const char* s) { return k.find(s) != std::string::npos; };
    if (has("h100")) return &device_table()[0];
    if (has("h200")) return &device_table()[1];
    if (has("a100")) return has("40gb") ? &device_table()[3] : &device_table()[2];
    if (has("b200")) return &device_table()[4];
    return nullptr;
}

std::string device_keys() {
    std::string s;
    for (const auto& d : device_table()) s += (s.empty() ? "" : ", ") + d.key;
    return s + ", cpu";
}

}  // namespace sixnd::plan
