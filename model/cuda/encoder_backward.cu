// encoder_backward: dwte[inp[b,t], :] += dout[b,t,:];  dwpe[t, :] += sum_b dout[b,t,:].
// Deterministic without atomics: the N = B*T (token, position) pairs are radix-sorted by
// token (stable, so positions stay ascending within a token); the first pair of each run of
// equal tokens owns that wte row and adds its run's dout rows to it in position order, in FP32,
// rounding into dwte once. dwpe: one thread per (t, c), adding over b in order. Both start from
// the stored gradient, as the CPU twin does, so FP32 sums match it bit for bit.
#include <cub/device/device_radix_sort.cuh>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__global__ void iota_kernel(int32_t* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i;
}

// grid (N sorted pairs, channel blocks); only run heads do work.
template <typename T>
__global__ void encoder_backward_wte(T* dwte, const T* dout, const int32_t* tok_sorted, const int32_t* pos_sorted,
                                     int N, int C) {
    int i = blockIdx.x;
    int tok = tok_sorted[i];
    if (i > 0 && tok_sorted[i - 1] == tok) return;
    int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C) return;
    T* w = dwte + static_cast<size_t>(tok) * C + c;
    float acc = to_float(*w);
    for (int j = i; j < N && tok_sorted[j] == tok; j++) acc += to_float(dout[static_cast<size_t>(pos_sorted[j]) * C + c]);
    *w = from_float<T>(acc);
}

template <typename T> __global__ void encoder_backward_wpe(T* dwpe, const T* dout, int B, int T_, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T_ * C) return;
    float acc = to_float(dwpe[idx]);
    for (int b = 0; b < B; b++) acc += to_float(dout[static_cast<size_t>(b) * T_ * C + idx]);
    dwpe[idx] = from_float<T>(acc);
}

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

}  // namespace

template <typename T>
void encoder_backward(T* dwte, T* dwpe, const T* dout, const int32_t* inp, int B, int T_, int C, Scratch& scratch,
                      cudaStream_t s) {
    const int N = B * T_;
    size_t sort_bytes = 0;
    SIXND_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                               static_cast<int32_t*>(nullptr), N, 0, 32, s));
    size_t arr = align256(sizeof(int32_t) * N);
    char* base = static_cast<char*>(scratch.get(3 * arr + sort_bytes));
    int32_t* pos_in = reinterpret_cast<int32_t*>(base);
    int32_t* tok_sorted = reinterpret_cast<int32_t*>(base + arr);
    int32_t* pos_sorted = reinterpret_cast<int32_t*>(base + 2 * arr);
    void* sort_tmp = base + 3 * arr;

    iota_kernel<<<ceil_div(N, 256), 256, 0, s>>>(pos_in, N);
    SIXND_CUDA_LAUNCHED("encoder_backward iota");
    SIXND_CUDA(cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, inp, tok_sorted, pos_in, pos_sorted, N, 0, 32, s));

    const int block = C >= 256 ? 256 : 32 * ceil_div(C, 32);
    dim3 grid(N, ceil_div(C, block));
    encoder_backward_wte<<<grid, block, 0, s>>>(dwte, dout, tok_sorted, pos_sorted, N, C);
    SIXND_CUDA_LAUNCHED("encoder_backward_wte");
    if (!dwpe) return;  // no position table (RoPE)
    encoder_backward_wpe<<<ceil_div(static_cast<size_t>(T_) * C, 256), 256, 0, s>>>(dwpe, dout, B, T_, C);
    SIXND_CUDA_LAUNCHED("encoder_backward_wpe");
}

template void encoder_backward<float>(float*, float*, const float*, const int32_t*, int, int, int, Scratch&,
                                      cudaStream_t);
template void encoder_backward<bf16>(bf16*, bf16*, const bf16*, const int32_t*, int, int, int, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
