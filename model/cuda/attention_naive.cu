// attention_naive: causal attention from cuBLASLt batched GEMMs (batch B*NH) and the softmax
// kernels; the reference for the flash kernel and the path for any head size or fp32.
// forward:  q,k,v = permute(qkv);  S = q k^T (FP32, [B,NH,T,T]);  P = softmax(S/sqrt(hs)) -> probs;
//           vacc = P v;  out = unpermute(vacc)
// backward: (P recomputed from q, k and lse when only lse was kept);  dvacc = permute(dout);  dP = dvacc v^T (FP32);  dv = P^T dvacc;
//           dS = softmax_backward(P, dP);  dq = dS k;  dk = dS^T q;  dqkv = unpermute(dq, dk, dv)
#include <cmath>
#include <type_traits>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

// One batched row-major GEMM over the B*NH heads: C[T,N] (+)= op(A) op(B).
template <typename T>
void head_gemm(Matmul& mm, int M, int N, int K, bool ta, bool tb, const void* A, const void* B, void* C,
               cudaDataType_t c_type, int batch) {
    GemmArgs g = dense_gemm(M, N, K, ta, tb, A, B, C, DataType<T>::value, c_type);
    g.stride_a = static_cast<long long>(M) * K;
    g.stride_b = static_cast<long long>(K) * N;
    g.stride_c = static_cast<long long>(M) * N;
    g.batch = batch;
    mm.gemm(g);
}

}  // namespace

template <typename T>
void attention_naive_forward(Matmul& mm, T* out, float* probs, float* lse, const T* qkv, int B, int T_, int C,
                             int NH, Scratch& scratch, cudaStream_t s) {
    const int hs = C / NH, BH = B * NH;
    const size_t H = static_cast<size_t>(BH) * T_ * hs, TT = static_cast<size_t>(BH) * T_ * T_;
    const bool need_pt = !std::is_same<T, float>::value;
    Carve c;
    c.add<T>(4 * H);
    c.add<T>(need_pt ? TT : 0);
    c.add<float>(probs ? 0 : TT);
    c.start(scratch.get(c.bytes()));
    T* q = c.take<T>(4 * H);
    T *k = q + H, *v = k + H, *vacc = v + H;
    T* pt = need_pt ? c.take<T>(TT) : nullptr;
    if (!probs) probs = c.take<float>(TT);
    attention_permute<T>(q, const_cast<T*>(qkv), 3, B, T_, NH, hs, true, s);
    head_gemm<T>(mm, T_, T_, hs, false, true, q, k, probs, CUDA_R_32F, BH);
    attention_softmax_forward<T>(probs, pt, lse, probs, nullptr, BH * T_, T_, 1.0f / std::sqrt(static_cast<float>(hs)),
                                 s);
    const void* P = need_pt ? static_cast<const void*>(pt) : static_cast<const void*>(probs);
    head_gemm<T>(mm, T_, hs, T_, false, false, P, v, vacc, DataType<T>::value, BH);
    attention_permute<T>(vacc, out, 1, B, T_, NH, hs, false, s);
}

template <typename T>
void attention_naive_backward(Matmul& mm, T* dqkv, const T* dout, const T* qkv, const float* probs,
                              const float* lse, int B, int T_, int C, int NH, Scratch& scratch, cudaStream_t s) {
    const int hs = C / NH, BH = B * NH;
    const size_t H = static_cast<size_t>(BH) * T_ * hs, TT = static_cast<size_t>(BH) * T_ * T_;
    const bool need_pt = !std::is_same<T, float>::value;
    Carve c;
    c.add<float>(TT);
    c.add<T>(7 * H);
    c.add<T>(TT);
    c.add<T>(need_pt ? TT : 0);
    c.add<float>(probs ? 0 : TT);
    c.start(scratch.get(c.bytes()));
    float* dprobs = c.take<float>(TT);
    T* q = c.take<T>(7 * H);
    T *k = q + H, *v = k + H, *dq = v + H, *dk = dq + H, *dv = dk + H, *dvacc = dv + H;
    T* dscores = c.take<T>(TT);
    T* pt = need_pt ? c.take<T>(TT) : nullptr;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));

    attention_permute<T>(q, const_cast<T*>(qkv), 3, B, T_, NH, hs, true, s);
    if (!probs) {  // recompute the probabilities from the saved log-sum-exp
        float* p = c.take<float>(TT);
        head_gemm<T>(mm, T_, T_, hs, false, true, q, k, p, CUDA_R_32F, BH);
        attention_softmax_forward<T>(p, nullptr, nullptr, p, lse, BH * T_, T_, scale, s);
        probs = p;
    }
    attention_permute<T>(dvacc, const_cast<T*>(dout), 1, B, T_, NH, hs, true, s);
    head_gemm<T>(mm, T_, T_, hs, false, true, dvacc, v, dprobs, CUDA_R_32F, BH);
    const void* P = probs;
    if constexpr (!std::is_same<T, float>::value) {
        cast<T, float>(pt, probs, TT, s);
        P = pt;
    }
    head_gemm<T>(mm, T_, hs, T_, true, false, P, dvacc, dv, DataType<T>::value, BH);
    attention_softmax_backward<T>(dscores, probs, dprobs, BH * T_, T_, scale, s);
    head_gemm<T>(mm, T_, hs, T_, false, false, dscores, k, dq, DataType<T>::value, BH);
    head_gemm<T>(mm, T_, hs, T_, true, false, dscores, q, dk, DataType<T>::value, BH);
    attention_permute<T>(dq, dqkv, 3, B, T_, NH, hs, false, s);
}

template void attention_naive_forward<float>(Matmul&, float*, float*, float*, const float*, int, int, int, int,
                                             Scratch&, cudaStream_t);
template void attention_naive_forward<bf16>(Matmul&, bf16*, float*, float*, const bf16*, int, int, int, int,
                                            Scratch&, cudaStream_t);
template void attention_naive_backward<float>(Matmul&, float*, const float*, const float*, const float*,
                                              const float*, int, int, int, int, Scratch&, cudaStream_t);
template void attention_naive_backward<bf16>(Matmul&, bf16*, const bf16*, const bf16*, const float*, const float*,
                                             int, int, int, int, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
