#include "core/device_specs.h"

#include <gtest/gtest.h>

using namespace sixnd;

// CUDA names as devices report them find the specific entry, not a shorter name they contain.
TEST(DeviceSpecs, CudaNamesFindTheSpecificPart) {
    EXPECT_EQ(find_device_spec("NVIDIA H100 80GB HBM3")->key, "h100");
    EXPECT_DOUBLE_EQ(find_device_spec("NVIDIA H100 PCIe")->bf16_flops, 756e12);
    EXPECT_EQ(find_device_spec("NVIDIA H200")->key, "h200");
    EXPECT_EQ(find_device_spec("NVIDIA GH200 480GB")->name, "NVIDIA GH200");
    EXPECT_EQ(find_device_spec("NVIDIA A100-SXM4-40GB")->key, "a100-40gb");
    EXPECT_EQ(find_device_spec("NVIDIA A100-SXM4-80GB")->key, "a100");
    EXPECT_EQ(find_device_spec("NVIDIA L40S")->name, "NVIDIA L40S");
    EXPECT_EQ(find_device_spec("NVIDIA L4")->name, "NVIDIA L4");
    EXPECT_EQ(find_device_spec("Some Future GPU"), nullptr);
}

TEST(DeviceSpecs, PlannerKeysAndDenseFigures) {
    EXPECT_DOUBLE_EQ(find_device_spec("h100")->bf16_flops, 989e12);
    EXPECT_DOUBLE_EQ(find_device_spec("H200")->mem_bw, 4.8e12);
    EXPECT_DOUBLE_EQ(find_device_spec("a100")->fp32_flops, 19.5e12);
    EXPECT_DOUBLE_EQ(find_device_spec("NVIDIA H200")->fp32_flops, 67e12);
    EXPECT_DOUBLE_EQ(find_device_spec("b200")->bf16_flops, 2.25e15);
    // The data sheets' own figures: A100 80GB SXM 2,039 GB/s; L40S BF16 362.05 dense (366 is its
    // TF32 figure with sparsity).
    EXPECT_DOUBLE_EQ(find_device_spec("a100")->mem_bw, 2.039e12);
    EXPECT_DOUBLE_EQ(find_device_spec("NVIDIA L40S")->bf16_flops, 362.05e12);
    for (const DeviceSpec& d : device_specs()) {
        EXPECT_GT(d.bf16_flops, d.fp32_flops) << d.name;
        EXPECT_GE(d.fp32_flops, 0) << d.name;
        if (!d.key.empty()) {
            EXPECT_GT(d.mem_bw * d.mem_bytes, 0) << d.key;
        }
    }
}

// A name is matched by whole words: a part number that merely begins with a listed one is
// another device, whose peak is not the listed one's (an RTX A4000 has half an A40's).
TEST(DeviceSpecs, APartNumberIsMatchedWhole) {
    EXPECT_EQ(find_device_spec("NVIDIA RTX A4000"), nullptr);
    EXPECT_EQ(find_device_spec("NVIDIA RTX A3000 Laptop GPU"), nullptr);
    EXPECT_EQ(find_device_spec("NVIDIA A40")->name, "NVIDIA A40");
    EXPECT_EQ(find_device_spec("NVIDIA A100 80GB PCIe")->key, "a100");
    EXPECT_EQ(find_device_spec("NVIDIA GeForce RTX 4090")->name, "NVIDIA RTX 4090");
    EXPECT_EQ(find_device_spec("NVIDIA RTX 6000 Ada Generation")->name, "NVIDIA RTX 6000 Ada");
}
