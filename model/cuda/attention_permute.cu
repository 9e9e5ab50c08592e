// attention_permute: rows[B,T,S,NH,hs] <-> heads[s][B,NH,T,hs] for the naive attention's
// batched GEMMs (S = 3 for qkv/dqkv, 1 for out/dout). One thread per element, indexed in the
// heads order so the head-major side is written (or read) contiguously.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T>
__global__ void attention_permute_kernel(T* heads, T* rows, int S, int B, int T_, int NH, int hs, bool to_heads) {
    size_t per = static_cast<size_t>(B) * NH * T_ * hs;
    size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= per * S) return;
    size_t r = idx;
    int d = static_cast<int>(r % hs); r /= hs;
    int t = static_cast<int>(r % T_); r /= T_;
    int h = static_cast<int>(r % NH); r /= NH;
    int b = static_cast<int>(r % B);
    int s = static_cast<int>(r / B);
    size_t ridx = ((static_cast<size_t>(b) * T_ + t) * S + s) * NH * hs + static_cast<size_t>(h) * hs + d;
    if (to_heads) heads[idx] = rows[ridx];
    else rows[ridx] = heads[idx];
}

}  // namespace

template <typename T>
void attention_permute(T* heads, T* rows, int S, int B, int T_, int NH, int hs, bool to_heads, cudaStream_t s) {
    size_t n = static_cast<size_t>(S) * B * NH * T_ * hs;
    attention_permute_kernel<T><<<ceil_div(n, 256), 256, 0, s>>>(heads, rows, S, B, T_, NH, hs, to_heads);
    SIXND_CUDA_LAUNCHED("attention_permute");
}

template void attention_permute<float>(float*, float*, int, int, int, int, int, bool, cudaStream_t);
template void attention_permute<bf16>(bf16*, bf16*, int, int, int, int, int, bool, cudaStream_t);

}  // namespace sixnd::cuda
