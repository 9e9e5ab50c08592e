// The CUDA device outside the kernels: error reporting, whether a device answers, what it is
// (name, peak FLOP/s from the table, memory), and CudaMemory, the MemoryBackend over
// cudaMalloc. Plain C++ against the runtime API.
#include <cstring>
#include <string>

#include "core/error.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/cuda_ops.h"

namespace sixnd {
namespace cuda {

void throw_cuda_error(const char* call, cudaError_t err, const char* file, int line) {
    throw Error("CUDA", std::string(call) + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                            ") at " + file + ":" + std::to_string(line));
}

void throw_cublas_error(const char* call, cublasStatus_t st, const char* file, int line) {
    throw Error("cuBLASLt", std::string(call) + " failed: status " + std::to_string(static_cast<int>(st)) + " at " +
                                file + ":" + std::to_string(line));
}

}  // namespace cuda

bool cuda_device_available(std::string* why) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        cudaGetLastError();  // clear it, so later calls do not report it again
        if (why) *why = std::string("no usable CUDA driver/device: ") + cudaGetErrorString(err);
        return false;
    }
    if (n == 0) {
        if (why) *why = "the CUDA driver reports no device";
        return false;
    }
    return true;
}

int cuda_device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

// Dense tensor-core peaks from the vendors' datasheets (TFLOP/s, bf16 with FP32 accumulate,
// and TF32); the 2:4-sparsity figures are never used. The first entry whose key the device
// name contains wins, so the more specific names come first.
bool cuda_peak_tflops(const std::string& device_name, double* bf16_tflops, double* tf32_tflops) {
    struct Entry {
        const char* key;
        double bf16, tf32;
    };
    static const Entry table[] = {
        {"H100 PCIe", 756.0, 378.0}, {"H100 NVL", 835.0, 418.0}, {"H200 NVL", 835.0, 418.0},
        {"GH200", 989.4, 494.7},     {"H100", 989.4, 494.7},     {"H200", 989.4, 494.7},
        {"H800 PCIe", 756.0, 378.0}, {"H800", 989.4, 494.7},     {"H20", 148.0, 74.0},
        {"B200", 2250.0, 1100.0},    {"B100", 1750.0, 875.0},    {"A100", 312.0, 156.0},
        {"A800", 312.0, 156.0},      {"A10G", 70.0, 35.0},       {"A10", 125.0, 62.5},
        {"A30", 165.0, 82.0},        {"A40", 149.7, 74.8},       {"L40S", 366.0, 183.0},
        {"L40", 181.0, 90.5},        {"L4", 121.0, 60.0},        {"RTX 6000 Ada", 364.2, 182.1},
        {"RTX A6000", 154.8, 77.4},  {"RTX 5090", 209.5, 104.8}, {"RTX 4090", 165.2, 82.6},
        {"RTX 4080", 97.5, 48.7},    {"RTX 3090", 71.0, 35.6},   {"RTX 3080", 59.5, 29.8},
    };
    for (const Entry& e : table) {
        if (device_name.find(e.key) != std::string::npos) {
            *bf16_tflops = e.bf16;
            *tf32_tflops = e.tf32;
            return true;
        }
    }
    *bf16_tflops = *tf32_tflops = 0.0;
    return false;
}

CudaDeviceInfo cuda_device_info(int device) {
    cudaDeviceProp prop{};
    SIXND_CUDA(cudaGetDeviceProperties(&prop, device));
    CudaDeviceInfo info;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.peak_known = cuda_peak_tflops(info.name, &info.peak_bf16_tflops, &info.peak_tf32_tflops);
    int prev = 0;
    SIXND_CUDA(cudaGetDevice(&prev));
    SIXND_CUDA(cudaSetDevice(device));
    SIXND_CUDA(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
    SIXND_CUDA(cudaSetDevice(prev));
    return info;
}

namespace {

// Device memory. Copies are synchronous with respect to the host (they follow all work
// queued on the legacy default stream, where the ops run), so a copy_to_host result is ready.
class CudaMemory final : public MemoryBackend {
public:
    explicit CudaMemory(int device) {
        std::string why;
        if (!cuda_device_available(&why)) throw Error("--device cuda", why);
        SIXND_CUDA(cudaSetDevice(device));
    }
    ~CudaMemory() override = default;
    const char* name() const override { return "cuda"; }
    bool is_host() const override { return false; }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
        SIXND_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    }
    void copy_to_host(void* dst, const void* src, size_t bytes) override {
        SIXND_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    }
    void copy(void* dst, const void* src, size_t bytes) override {
        SIXND_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    }
    void memset(void* dst, int value, size_t bytes) override { SIXND_CUDA(cudaMemset(dst, value, bytes)); }
    void sync() override { SIXND_CUDA(cudaDeviceSynchronize()); }

protected:
    void* raw_allocate(size_t bytes) override {
        void* p = nullptr;
        cudaError_t err = cudaMalloc(&p, bytes ? bytes : 256);
        if (err == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            return nullptr;  // MemoryBackend::allocate reports it with the size and category
        }
        if (err != cudaSuccess) cuda::throw_cuda_error("cudaMalloc", err, __FILE__, __LINE__);
        return p;
    }
    void raw_free(void* p) override { SIXND_CUDA(cudaFree(p)); }
};

}  // namespace

std::unique_ptr<MemoryBackend> make_cuda_memory(int device) { return std::make_unique<CudaMemory>(device); }

}  // namespace sixnd
