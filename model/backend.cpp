#include "model/backend.h"

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/local_rank.h"
#include "core/log.h"
#include "model/cpu/cpu_ops.h"
#ifdef SIXND_HAVE_CUDA
#include "model/cuda/cuda_ops.h"
#endif

namespace sixnd {

std::string resolve_device(const std::string& device) {
    if (device != "cpu" && device != "cuda" && device != "auto")
        throw Error("--device", "unknown device '" + device + "' (expected cpu, cuda or auto)");
#ifdef SIXND_HAVE_CUDA
    std::string why;
    if (device != "cpu" && cuda_device_available(&why)) return "cuda";
    if (device == "cuda") throw Error("--device cuda", "no usable CUDA device: " + why);
    // Devices that answer but cannot run the kernels (a V100): the CPU is taken, and said to be.
    if (device == "auto" && cuda_device_count() > 0) log_warn("--device auto: " + why + "; using the CPU");
#else
    if (device == "cuda") throw Error("--device cuda", "this sixnd was built without CUDA");
#endif
    return "cpu";
}

Backend make_backend(const std::string& device, DType dtype, int local_rank) {
    Backend b;
#ifdef SIXND_HAVE_CUDA
    if (resolve_device(device) == "cuda") {
        const int device_index = device_for_local_rank(local_rank, cuda_device_count());
        b.device = "cuda";
        b.memory = make_cuda_memory(device_index);
        b.ops = make_cuda_ops(dtype, *b.memory);
        b.device_index = device_index;
        const CudaDeviceInfo info = cuda_device_info(device_index);
        b.device_name = info.name;
        if (info.peak_known) b.table_peak_tflops = dtype == DType::bf16 ? info.peak_bf16_tflops : info.peak_fp32_tflops;
        return b;
    }
#else
    (void)local_rank;
    resolve_device(device);
#endif
    b.device = "cpu";
    b.device_name = cpu_features().model_name.empty() ? "cpu" : cpu_features().model_name;
    b.memory = std::make_unique<HostMemory>();
    b.ops = make_cpu_ops(dtype, *b.memory);
    return b;
}

size_t device_bytes_in_use(const Backend& b) {
#ifdef SIXND_HAVE_CUDA
    if (b.device == "cuda") {
        const CudaDeviceInfo info = cuda_device_info(b.device_index);
        return info.total_bytes - info.free_bytes;
    }
#endif
    (void)b;
    return 0;
}

}  // namespace sixnd
