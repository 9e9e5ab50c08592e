// Which CUDA devices count as usable (model/cuda/device_rule.h): the kernels are sm_80 code, so
// an older device is refused with a reason naming it, where it used to be picked by --device
// auto and fail at the first kernel. Plain C++: runs without a GPU or the CUDA toolkit.
#include <gtest/gtest.h>

#include "model/cuda/device_rule.h"

using namespace sixnd::cuda;

namespace {

TEST(CudaDeviceRule, AmpereAndLaterRunTheKernels) {
    EXPECT_EQ(device_unsupported(0, 1, "NVIDIA A100-SXM4-80GB", 8, 0), "");
    EXPECT_EQ(device_unsupported(0, 1, "NVIDIA GeForce RTX 3090", 8, 6), "");
    EXPECT_EQ(device_unsupported(3, 8, "NVIDIA H100 80GB HBM3", 9, 0), "");
    EXPECT_EQ(device_unsupported(0, 1, "NVIDIA B200", 10, 0), "");
}

TEST(CudaDeviceRule, OlderDevicesAreRefusedByName) {
    const std::string t4 = device_unsupported(0, 1, "Tesla T4", 7, 5);
    EXPECT_NE(t4.find("device 0 (Tesla T4) is compute capability 7.5"), std::string::npos) << t4;
    EXPECT_NE(t4.find("8.0 or newer"), std::string::npos) << t4;
    EXPECT_EQ(t4.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << "one device: nothing to leave out";
    const std::string v100 = device_unsupported(1, 2, "Tesla V100-SXM2-16GB", 7, 0);
    EXPECT_NE(v100.find("device 1 (Tesla V100-SXM2-16GB) is compute capability 7.0"), std::string::npos) << v100;
    EXPECT_NE(v100.find("CUDA_VISIBLE_DEVICES"), std::string::npos) << v100;
}

}  // namespace
