// attention_permute: rows[B,T,(nq + 2 nkv) hs] <-> head-major q[B,nq,T,hs], k[B,nkv,T,hs],
// v[B,nkv,T,hs] (one after another) for the naive attention's batched GEMMs: qkv/dqkv with
// nq = NH query heads and nkv = NKV key/value heads; out/dout with nkv = 0. One thread per
// element, indexed in the heads order so the head-major side is written (or read) contiguously.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T>
__global__ void attention_permute_kernel(T* heads, T* rows, int B, int T_, int hs, int nq, int nkv, bool to_heads) {
    const size_t per_head = static_cast<size_t>(B) * T_ * hs;
    const size_t nq_el = per_head * nq, nkv_el = per_head * nkv;
    const size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= nq_el + 2 * nkv_el) return;
    // Which section (q, k or v), its head count and its first channel in a row.
    size_t r = idx;
    int nh = nq, col0 = 0;
    if (r >= nq_el) {
        r -= nq_el;
        nh = nkv;
        col0 = nq * hs;
        if (r >= nkv_el) {
            r -= nkv_el;
            col0 += nkv * hs;
        }
    }
    const int d = static_cast<int>(r % hs); r /= hs;
    const int t = static_cast<int>(r % T_); r /= T_;
    const int h = static_cast<int>(r % nh);
    const size_t b = r / nh;
    const size_t width = static_cast<size_t>(nq + 2 * nkv) * hs;
    const size_t ridx = (b * T_ + t) * width + col0 + static_cast<size_t>(h) * hs + d;
    if (to_heads) heads[idx] = rows[ridx];
    else rows[ridx] = heads[idx];
}

}  // namespace

template <typename T>
void attention_permute(T* heads, T* rows, int B, int T_, int hs, int nq, int nkv, bool to_heads, cudaStream_t s) {
    const size_t n = static_cast<size_t>(B) * T_ * hs * (nq + 2 * nkv);
    attention_permute_kernel<T><<<ceil_div(n, 256), 256, 0, s>>>(heads, rows, B, T_, hs, nq, nkv, to_heads);
    SIXND_CUDA_LAUNCHED("attention_permute");
}

template void attention_permute<float>(float*, float*, int, int, int, int, int, bool, cudaStream_t);
template void attention_permute<bf16>(bf16*, bf16*, int, int, int, int, int, bool, cudaStream_t);

}  // namespace sixnd::cuda
