// The devices sixnd plans for: dense BF16 peak FLOP/s, memory bandwidth and memory size, as
// core/device_specs lists them (the one table; the CUDA backend's MFU peak reads it too). CPUs are not in the table: their peak comes from their
// features and their bandwidth from a measurement, which the caller passes in as a DeviceSpec.
#pragma once
#include <string>
#include <vector>

namespace sixnd::plan {

struct DeviceSpec {
    std::string key;        // what --device accepts: h100, h200, a100, a100-40gb, b200
    std::string name;       // the part it stands for
    double peak_flops = 0;  // FLOP/s the run's dtype computes at: dense BF16 in the table
    double mem_bw = 0;      // bytes/s
    double mem_bytes = 0;   // device memory
    std::string source;     // where the numbers come from
    double fp32_flops = 0;  // plain FP32 FLOP/s (0: not listed)
    std::string peak_what = "dense BF16 FLOP/s";  // what peak_flops is
};

const std::vector<DeviceSpec>& device_table();

// By key (case-insensitive), or by a CUDA device name such as "NVIDIA H100 80GB HBM3"; null
// when unknown.
const DeviceSpec* find_device(const std::string& key_or_name);

// Every key, comma-separated (for error messages).
std::string device_keys();

// FLOP per byte at which a kernel moves from memory-bound to compute-bound: peak / bandwidth.
inline double ridge_point(double peak_flops, double mem_bw) { return peak_flops / mem_bw; }

}  // namespace sixnd::plan
