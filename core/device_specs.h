// Accelerators' dense tensor-core BF16 peaks (never the 2:4-sparsity figures), FP32 peaks, memory
// bandwidth and memory size, from the vendors' data sheets: the one table that MFU (the CUDA
// backend), the planner and the profiler read.
#pragma once
#include <string>
#include <vector>

namespace sixnd {

struct DeviceSpec {
    std::string key;    // what `sixnd plan --device` accepts; "" when the planner does not offer it
    std::string match;  // words a CUDA device name contains (whole words, any case) when it is this device
    std::string name;
    double bf16_flops = 0;  // FLOP/s, BF16 with FP32 accumulate
    // FLOP/s, plain FP32 (CUDA cores): what --dtype fp32's GEMMs run at, since they are asked for
    // FP32 compute, not TF32 (model/cuda/matmul.cu). 0: not listed.
    double fp32_flops = 0;
    double mem_bw = 0;      // bytes/s (0: not listed)
    // Bytes as the driver reports them (nvidia-smi's MiB x 2^20), not the data sheet's "80GB":
    // the planner's "fits" compares against it. 0: not listed.
    double mem_bytes = 0;
    std::string source;
};

// Most specific first: the first entry whose words a name contains is the device.
const std::vector<DeviceSpec>& device_specs();

// By planner key, or by a CUDA device name ("NVIDIA H100 80GB HBM3"); null when unknown.
const DeviceSpec* find_device_spec(const std::string& key_or_name);

}  // namespace sixnd
