// attention_naive: causal grouped-query attention from cuBLASLt batched GEMMs and the softmax
// kernels; the reference for the flash kernel and the path for any head size or fp32.
// With G = NH/NKV, query heads h = kv*G + g are consecutive, so the head-major q[B,NH,T,hs] is
// q[B*NKV][G*T, hs]: each GEMM is batched over the B*NKV kv heads with the G query heads of a
// group stacked as G*T rows against the group's one k[T,hs] and v[T,hs]. The scores
// [B*NKV][G*T, T] are then exactly [B,NH,T,T], and the products that reduce over G*T rows (dk,
// dv) sum a kv head's query heads inside the GEMM: no copies of k and v, deterministic.
// forward:  q,k,v = permute(qkv);  S = q k^T (FP32);  P = softmax(S/sqrt(hs)) -> probs (+ lse,
//           row_max);  vacc = P v;  out = unpermute(vacc)
// backward: (P recomputed from q, k and lse when only lse was kept);  dvacc = permute(dout);
//           dP = dvacc v^T (FP32);  dv = P^T dvacc;  dS = softmax_backward(P, dP);  dq = dS k;
//           dk = dS^T q;  dqkv = unpermute(dq, dk, dv)
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

// Batched GEMMs at most this many at a time: GEMM kernels that put the batch on a grid's y or z
// axis fail past 65,535 (cuBLAS on sm_70, CUTLASS's GemmBatched), and B*NKV can pass it. A power
// of two keeps every chunk's start as aligned as the whole.
constexpr int kBatchChunk = 32768;

// One batched row-major GEMM over the B*NKV kv heads: C[M,N] (+)= op(A) op(B); A and B are T.
template <typename T>
void group_gemm(Matmul& mm, int M, int N, int K, bool ta, bool tb, const void* A, const void* B, void* C,
                cudaDataType_t c_type, int batch) {
    const long long stride_a = static_cast<long long>(M) * K, stride_b = static_cast<long long>(K) * N,
                    stride_c = static_cast<long long>(M) * N;
    const size_t c_size = c_type == CUDA_R_32F ? sizeof(float) : sizeof(T);
    for (int b0 = 0; b0 < batch; b0 += kBatchChunk) {
        GemmArgs g = dense_gemm(M, N, K, ta, tb, static_cast<const T*>(A) + b0 * stride_a,
                                static_cast<const T*>(B) + b0 * stride_b,
                                static_cast<char*>(C) + static_cast<size_t>(b0) * stride_c * c_size, DataType<T>::value,
                                c_type);
        g.stride_a = stride_a;
        g.stride_b = stride_b;
        g.stride_c = stride_c;
        g.batch = std::min(kBatchChunk, batch - b0);
        mm.gemm(g);
    }
}

}  // namespace

template <typename T>
void attention_naive_forward(Matmul& mm, T* out, float* probs, float* lse, float* row_max, const T* qkv, int B,
                             int T_, int C, int NH, int NKV, Scratch& scratch, cudaStream_t s) {
    const int hs = C / NH, G = NH / NKV, BKV = B * NKV, GT = G * T_;
    const size_t Hq = static_cast<size_t>(B) * NH * T_ * hs, Hkv = static_cast<size_t>(BKV) * T_ * hs;
    const size_t TT = static_cast<size_t>(B) * NH * T_ * T_;
    const bool need_pt = !std::is_same<T, float>::value;
    Carve c;
    c.add<T>(2 * Hq + 2 * Hkv);
    c.add<T>(need_pt ? TT : 0);
    c.add<float>(probs ? 0 : TT);
    c.start(scratch.get(c.bytes()));
    T* q = c.take<T>(2 * Hq + 2 * Hkv);
    T *k = q + Hq, *v = k + Hkv, *vacc = v + Hkv;
    T* pt = need_pt ? c.take<T>(TT) : nullptr;
    if (!probs) probs = c.take<float>(TT);
    attention_permute<T>(q, const_cast<T*>(qkv), B, T_, hs, NH, NKV, true, s);
    group_gemm<T>(mm, GT, T_, hs, false, true, q, k, probs, CUDA_R_32F, BKV);
    attention_softmax_forward<T>(probs, pt, lse, row_max, probs, nullptr, B * NH * T_, T_,
                                 1.0f / std::sqrt(static_cast<float>(hs)), s);
    const void* P = need_pt ? static_cast<const void*>(pt) : static_cast<const void*>(probs);
    group_gemm<T>(mm, GT, hs, T_, false, false, P, v, vacc, DataType<T>::value, BKV);
    attention_permute<T>(vacc, out, B, T_, hs, NH, 0, false, s);
}

template <typename T>
void attention_naive_backward(Matmul& mm, T* dqkv, const T* dout, const T* qkv, const float* probs,
                              const float* lse, int B, int T_, int C, int NH, int NKV, Scratch& scratch,
                              cudaStream_t s) {
    const int hs = C / NH, G = NH / NKV, BKV = B * NKV, GT = G * T_;
    const size_t Hq = static_cast<size_t>(B) * NH * T_ * hs, Hkv = static_cast<size_t>(BKV) * T_ * hs;
    const size_t TT = static_cast<size_t>(B) * NH * T_ * T_;
    const bool need_pt = !std::is_same<T, float>::value;
    Carve c;
    c.add<float>(TT);
    c.add<T>(3 * Hq + 4 * Hkv);
    c.add<T>(TT);
    c.add<T>(need_pt ? TT : 0);
    c.add<float>(probs ? 0 : TT);
    c.start(scratch.get(c.bytes()));
    float* dprobs = c.take<float>(TT);
    // q, k, v and dq, dk, dv each in the order attention_permute reads and writes them.
    T* q = c.take<T>(3 * Hq + 4 * Hkv);
    T *k = q + Hq, *v = k + Hkv, *dq = v + Hkv, *dk = dq + Hq, *dv = dk + Hkv, *dvacc = dv + Hkv;
    T* dscores = c.take<T>(TT);
    T* pt = need_pt ? c.take<T>(TT) : nullptr;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));

    attention_permute<T>(q, const_cast<T*>(qkv), B, T_, hs, NH, NKV, true, s);
    if (!probs) {  // recompute the probabilities from the saved log-sum-exp
        float* p = c.take<float>(TT);
        group_gemm<T>(mm, GT, T_, hs, false, true, q, k, p, CUDA_R_32F, BKV);
        attention_softmax_forward<T>(p, nullptr, nullptr, nullptr, p, lse, B * NH * T_, T_, scale, s);
        probs = p;
    }
    attention_permute<T>(dvacc, const_cast<T*>(dout), B, T_, hs, NH, 0, true, s);
    group_gemm<T>(mm, GT, T_, hs, false, true, dvacc, v, dprobs, CUDA_R_32F, BKV);
    const void* P = probs;
    if constexpr (!std::is_same<T, float>::value) {
        cast<T, float>(pt, probs, TT, s);
        P = pt;
    }
    group_gemm<T>(mm, T_, hs, GT, true, false, P, dvacc, dv, DataType<T>::value, BKV);
    attention_softmax_backward<T>(dscores, probs, dprobs, B * NH * T_, T_, scale, s);
    group_gemm<T>(mm, GT, hs, T_, false, false, dscores, k, dq, DataType<T>::value, BKV);
    group_gemm<T>(mm, T_, hs, GT, true, false, dscores, q, dk, DataType<T>::value, BKV);
    attention_permute<T>(dq, dqkv, B, T_, hs, NH, NKV, false, s);
}

template void attention_naive_forward<float>(Matmul&, float*, float*, float*, float*, const float*, int, int, int,
                                             int, int, Scratch&, cudaStream_t);
template void attention_naive_forward<bf16>(Matmul&, bf16*, float*, float*, float*, const bf16*, int, int, int, int,
                                            int, Scratch&, cudaStream_t);
template void attention_naive_backward<float>(Matmul&, float*, const float*, const float*, const float*,
                                              const float*, int, int, int, int, int, Scratch&, cudaStream_t);
template void attention_naive_backward<bf16>(Matmul&, bf16*, const bf16*, const bf16*, const float*, const float*,
                                             int, int, int, int, int, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
