// matmul_backward_bias: dbias[OC] += sum_n dout[n, :] for dout[N,OC].
// Deterministic column sums: blocks of (32 columns x 8 row lanes) over G row groups write FP32
// partials [G, OC] in a fixed order; a second pass adds them in order and rounds into T once.
// G depends only on N, so the bits never depend on the device.
#include <algorithm>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

constexpr int kRowsPerStep = 8;

template <typename T> __global__ void bias_partials(float* part, const T* dout, int N, int OC) {
    __shared__ float sh[kRowsPerStep][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (c < OC)
        for (int r = blockIdx.y * kRowsPerStep + threadIdx.y; r < N; r += gridDim.y * kRowsPerStep)
            acc += to_float(dout[static_cast<size_t>(r) * OC + c]);
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < OC) {
        for (int y = 1; y < kRowsPerStep; y++) acc += sh[y][threadIdx.x];
        part[static_cast<size_t>(blockIdx.y) * OC + c] = acc;
    }
}

template <typename T> __global__ void bias_finish(T* dbias, const float* part, int G, int OC) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= OC) return;
    float acc = 0.0f;
    for (int g = 0; g < G; g++) acc += part[static_cast<size_t>(g) * OC + c];
    dbias[c] = from_float<T>(to_float(dbias[c]) + acc);
}

}  // namespace

template <typename T>
void matmul_backward_bias(T* dbias, const T* dout, int N, int OC, Scratch& scratch, cudaStream_t s) {
    const int G = std::min(ceil_div(N, 4 * kRowsPerStep), 256);
    float* part = static_cast<float*>(scratch.get(sizeof(float) * static_cast<size_t>(G) * OC));
    bias_partials<T><<<dim3(ceil_div(OC, 32), G), dim3(32, kRowsPerStep), 0, s>>>(part, dout, N, OC);
    SIXND_CUDA_LAUNCHED("matmul_backward_bias partials");
    bias_finish<T><<<ceil_div(OC, 256), 256, 0, s>>>(dbias, part, G, OC);
    SIXND_CUDA_LAUNCHED("matmul_backward_bias finish");
}

template void matmul_backward_bias<float>(float*, const float*, int, int, Scratch&, cudaStream_t);
template void matmul_backward_bias<bf16>(bf16*, const bf16*, int, int, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
