// The CUDA device outside the kernels: error reporting, whether the devices answer and can run
// the kernels, what one is (name, peak FLOP/s from the table, memory), and CudaMemory, the
// MemoryBackend over cudaMalloc. Plain C++ against the runtime API.
#include <cstring>
#include <string>

#include "core/device_specs.h"
#include "core/error.h"
#include "core/log.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/cuda_ops.h"
#include "model/cuda/device_rule.h"

namespace sixnd {
namespace cuda {

void throw_cuda_error(const char* call, cudaError_t err, const char* file, int line) {
    throw Error("CUDA", std::string(call) + " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                            ") at " + file + ":" + std::to_string(line));
}

void throw_cublas_error(const char* call, cublasStatus_t st, const char* file, int line) {
    throw Error("cuBLASLt", std::string(call) + " failed: " + cublasLtGetStatusName(st) + " (" +
                                cublasLtGetStatusString(st) + ") at " + file + ":" + std::to_string(line));
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
    // Every visible device, not just this rank's: ranks that pick different devices must still
    // agree on the backend.
    for (int d = 0; d < n; d++) {
        cudaDeviceProp prop{};
        err = cudaGetDeviceProperties(&prop, d);
        if (err != cudaSuccess) {
            cudaGetLastError();
            if (why) *why = "device " + std::to_string(d) + " does not answer: " + cudaGetErrorString(err);
            return false;
        }
        const std::string unsupported = cuda::device_unsupported(d, n, prop.name, prop.major, prop.minor);
        if (!unsupported.empty()) {
            if (why) *why = unsupported;
            return false;
        }
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

// The peaks of core/device_specs, in TFLOP/s: dense BF16 with FP32 accumulate, and plain FP32.
bool cuda_peak_tflops(const std::string& device_name, double* bf16_tflops, double* fp32_tflops) {
    const DeviceSpec* d = find_device_spec(device_name);
    *bf16_tflops = d ? d->bf16_flops / 1e12 : 0.0;
    *fp32_tflops = d ? d->fp32_flops / 1e12 : 0.0;
    return d != nullptr;
}

CudaDeviceInfo cuda_device_info(int device) {
    cudaDeviceProp prop{};
    SIXND_CUDA(cudaGetDeviceProperties(&prop, device));
    CudaDeviceInfo info;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.peak_known = cuda_peak_tflops(info.name, &info.peak_bf16_tflops, &info.peak_fp32_tflops);
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
    // Frees run in destructors, often while the error that ended the work unwinds: after a
    // kernel fault every later call fails with that same sticky error, and throwing here would
    // end the process in std::terminate with this call's name in place of the fault's. So a
    // failed free is said once and otherwise passed over.
    void raw_free(void* p) override {
        const cudaError_t err = cudaFree(p);
        if (err == cudaSuccess || free_failed_) return;
        free_failed_ = true;
        log_warn(std::string("CUDA: cudaFree failed: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                 "); device memory is no longer freed");
    }

private:
    bool free_failed_ = false;
};

}  // namespace

std::unique_ptr<MemoryBackend> make_cuda_memory(int device) { return std::make_unique<CudaMemory>(device); }

}  // namespace sixnd
