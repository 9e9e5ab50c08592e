// CUDA and cuBLASLt error checking for host code (.cu and .cpp alike): a failed call throws
// sixnd::Error naming the call, the CUDA error string and where it was made.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

namespace sixnd::cuda {

[[noreturn]] void throw_cuda_error(const char* call, cudaError_t err, const char* file, int line);
[[noreturn]] void throw_cublas_error(const char* call, cublasStatus_t st, const char* file, int line);

#define SIXND_CUDA(call)                                                                          \
    do {                                                                                          \
        cudaError_t sixnd_err_ = (call);                                                          \
        if (sixnd_err_ != cudaSuccess) ::sixnd::cuda::throw_cuda_error(#call, sixnd_err_, __FILE__, __LINE__); \
    } while (0)

// After every launch: a bad configuration shows up here, a fault in the kernel at the next sync.
#define SIXND_CUDA_LAUNCHED(name)                                                                 \
    do {                                                                                          \
        cudaError_t sixnd_err_ = cudaGetLastError();                                              \
        if (sixnd_err_ != cudaSuccess) ::sixnd::cuda::throw_cuda_error(name, sixnd_err_, __FILE__, __LINE__); \
    } while (0)

#define SIXND_CUBLAS(call)                                                                        \
    do {                                                                                          \
        cublasStatus_t sixnd_st_ = (call);                                                        \
        if (sixnd_st_ != CUBLAS_STATUS_SUCCESS) ::sixnd::cuda::throw_cublas_error(#call, sixnd_st_, __FILE__, __LINE__); \
    } while (0)

}  // namespace sixnd::cuda
