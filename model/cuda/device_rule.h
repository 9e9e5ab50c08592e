// Which CUDA devices sixnd's kernels run on. Plain C++ (no CUDA types), so the rule is
// unit-tested on machines without a GPU (tests/model/cuda_device_rule_test.cpp).
//
// The kernels are sm_80 code (the flash kernels' cp.async, ldmatrix and BF16 mma.sync cannot be
// built for less), so SIXND_CUDA_ARCHS holds 8.0 and up. An older device (V100, T4) would take a
// run as far as its first kernel and end it there with CUDA's "no kernel image is available":
// it is no usable device, so --device auto trains on the CPU and --device cuda says why.
#pragma once
#include <string>

namespace sixnd::cuda {

constexpr int kMinComputeMajor = 8;

// Empty when device `index` (of the `count` visible ones) can run the kernels, else why not.
inline std::string device_unsupported(int index, int count, const std::string& name, int major, int minor) {
    if (major >= kMinComputeMajor) return "";
    std::string why = "device " + std::to_string(index) + " (" + name + ") is compute capability " +
                      std::to_string(major) + "." + std::to_string(minor) + ", and sixnd's CUDA kernels need " +
                      std::to_string(kMinComputeMajor) + ".0 or newer (A100, H100 and later)";
    if (count > 1) why += "; CUDA_VISIBLE_DEVICES can leave it out";
    return why;
}

}  // namespace sixnd::cuda
