// sum_squares: sum of x[i]^2 over n elements, returned to the host as a double (the global
// gradient norm is its square root). Deterministic: a fixed grid of kBlocks blocks (never
// sized from the device) strides over x in 16-byte packets with a double accumulator per
// thread, reduces each block in a fixed tree, and one block adds the kBlocks partials in order.
// A packet's squares are summed in float; a packet whose float sum overflows (values beyond
// ~4e18, whose squares a double holds) is summed again in double, so that only a NaN or an
// infinity in x makes the result non-finite, as on the CPU (model/cpu/reduce.cpp).
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

constexpr int kBlocks = 1024, kThreads = 256;

__device__ double block_sum(double v) {
    __shared__ double sh[kThreads / 32];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    double t = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < kThreads / 32; w++) t += sh[w];
    return t;  // valid in thread 0
}

template <typename T, int P> __global__ void sum_squares_partials(double* part, const T* x, size_t n) {
    double acc = 0;
    size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x * P;
    size_t i = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * P;
    for (; i + P <= n; i += stride) {
        float f[P];
        load_f32<P>(f, x + i);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < P; k++) s += f[k] * f[k];
        if (isfinite(s)) {
            acc += s;
        } else {
#pragma unroll
            for (int k = 0; k < P; k++) acc += static_cast<double>(f[k]) * f[k];
        }
    }
    for (; i < n; i++) {
        const double f = to_float(x[i]);
        acc += f * f;
    }
    double t = block_sum(acc);
    if (threadIdx.x == 0) part[blockIdx.x] = t;
}

__global__ void sum_squares_finish(double* out, const double* part) {
    double acc = 0;
    for (int i = threadIdx.x; i < kBlocks; i += kThreads) acc += part[i];
    double t = block_sum(acc);
    if (threadIdx.x == 0) *out = t;
}

}  // namespace

template <typename T> double sum_squares(const T* x, size_t n, Scratch& scratch, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    double* part = static_cast<double*>(scratch.get(sizeof(double) * (kBlocks + 1)));
    if (aligned16(x))
        sum_squares_partials<T, P><<<kBlocks, kThreads, 0, s>>>(part, x, n);
    else
        sum_squares_partials<T, 1><<<kBlocks, kThreads, 0, s>>>(part, x, n);
    SIXND_CUDA_LAUNCHED("sum_squares partials");
    sum_squares_finish<<<1, kThreads, 0, s>>>(part + kBlocks, part);
    SIXND_CUDA_LAUNCHED("sum_squares finish");
    double result = 0;
    SIXND_CUDA(cudaMemcpyAsync(&result, part + kBlocks, sizeof(double), cudaMemcpyDeviceToHost, s));
    SIXND_CUDA(cudaStreamSynchronize(s));
    return result;
}

template double sum_squares<float>(const float*, size_t, Scratch&, cudaStream_t);
template double sum_squares<bf16>(const bf16*, size_t, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
