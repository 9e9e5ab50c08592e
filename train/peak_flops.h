// The peak FLOP/s that MFU is measured against: the --peak-tflops override, else the device's
// dense BF16 (or TF32/FP32) figure from the table (never a sparsity figure), else — CPUs and
// unknown devices — a measured matmul ceiling, labelled as such.
#pragma once
#include <string>

#include "model/backend.h"

namespace sixnd {

struct PeakFlops {
    double flops_per_s = 0;
    std::string source;  // "--peak-tflops", "table: NVIDIA H200 bf16", "measured matmul ceiling"
};

PeakFlops peak_flops(Backend& be, double override_tflops);

}  // namespace sixnd
