// The CUDA backend's entry points. Plain C++ (no CUDA types), so the trainer, the CLI and the
// tests include it whether or not they are compiled by nvcc; the build only provides it when
// SIXND_HAVE_CUDA is defined.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/memory.h"
#include "model/ops.h"

namespace sixnd {

// True when a driver answers and every visible device can run the kernels (model/cuda/
// device_rule.h); otherwise false and *why says what is missing (no driver, no device, driver
// older than the runtime, a device older than the kernels...).
bool cuda_device_available(std::string* why);
// The number of devices this process can see (0 when the driver answers none).
int cuda_device_count();

struct CudaDeviceInfo {
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int multiprocessors = 0;
    // The dense BF16 tensor-core peak (never the 2:4 sparsity figure) and the plain FP32 peak
    // (0 when the table lists none). peak_known is false when the name is not in the table; the
    // caller then measures a matmul ceiling instead, as it does for a peak of 0.
    double peak_bf16_tflops = 0, peak_fp32_tflops = 0;
    bool peak_known = false;
    size_t free_bytes = 0, total_bytes = 0;  // cudaMemGetInfo
};
CudaDeviceInfo cuda_device_info(int device);

// The peak table by device name, usable without a device. Returns false (and zeros) for an
// unknown name.
bool cuda_peak_tflops(const std::string& device_name, double* bf16_tflops, double* fp32_tflops);

struct CudaOpsOptions {
    // Bitwise-reproducible results (the Ops contract). Off lets the flash backward accumulate
    // dQ with atomics in one fused kernel: faster, but the summation order varies run to run.
    bool deterministic = true;
};

std::unique_ptr<MemoryBackend> make_cuda_memory(int device = 0);
// mem must come from make_cuda_memory; the ops run on the device that mem was made for.
std::unique_ptr<Ops> make_cuda_ops(DType dtype, MemoryBackend& mem, const CudaOpsOptions& options = {});

}  // namespace sixnd
