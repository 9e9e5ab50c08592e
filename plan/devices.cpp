#include "plan/devices.h"

#include "core/device_specs.h"

namespace sixnd::plan {

namespace {

DeviceSpec from_spec(const sixnd::DeviceSpec& d) {
    return {d.key, d.name, d.bf16_flops, d.mem_bw, d.mem_bytes, d.source, d.fp32_flops};
}

}  // namespace

// The devices core/device_specs lists with a planner key, in its order.
const std::vector<DeviceSpec>& device_table() {
    static const std::vector<DeviceSpec> table = [] {
        std::vector<DeviceSpec> t;
        for (const sixnd::DeviceSpec& d : device_specs())
            if (!d.key.empty()) t.push_back(from_spec(d));
        return t;
    }();
    return table;
}

const DeviceSpec* find_device(const std::string& key_or_name) {
    const sixnd::DeviceSpec* d = find_device_spec(key_or_name);
    if (!d || d->key.empty()) return nullptr;
    for (const DeviceSpec& p : device_table())
        if (p.key == d->key) return &p;
    return nullptr;
}

std::string device_keys() {
    std::string s;
    for (const auto& d : device_table()) s += (s.empty() ? "" : ", ") + d.key;
    return s + ", cpu";
}

}  // namespace sixnd::plan
