// Causal self-attention that materialises the T x T probabilities (the reference form).
// qkv[B,T,C + 2*NKV*hs] -> out[B,T,C]; probs[B,NH,T,T] = softmax(q k^T / sqrt(hs)) with zeros
// above the diagonal, kept for backward. Query head h attends with kv head h / (NH/NKV).
// forward: parallel over (b, head); each task converts its head's q, k, v to FP32 once
// ([T,hs] each, per thread; k transposed for the scores).
// backward: parallel over (b, kv head), which owns the dk, dv of its group's NH/NKV query heads
// (no two threads write one kv head); per query head and row t, with dp = dout_t . v:
//   dv[t2] += p[t,t2] dout_t;  ds = p (dp - sum_t2 p dp) / sqrt(hs);  dq[t] += ds k[t2];  dk[t2] += ds q[t]
// accumulated in FP32 (the group's heads in order) and written (overwriting dqkv) once.
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/cpu/attention.h"
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

template <typename X>
void attention_naive_forward(X* out, float* probs, float* row_max, const X* qkv, int B, int T, int C, int NH,
                             int NKV) {
    const HeadView hv(T, C, NH, NKV);
    const int group = NH / NKV;
    const int hs = hv.hs;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const size_t th = static_cast<size_t>(T) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        std::vector<float> q(th), kt(th), v(th), acc(hs);
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                for (int t = 0; t < T; t++) {
                    load_row(&q[static_cast<size_t>(t) * hs], qkv + hv.q(b, t, h), hs, scale);
                    load_row(&v[static_cast<size_t>(t) * hs], qkv + hv.v(b, t, h / group), hs);
                }
                load_columns(kt.data(), T, qkv + hv.k(b, 0, h / group), hv.row(0, 1), T, hs);
                for (int t = 0; t < T; t++) {
                    float* p = probs + ((static_cast<size_t>(b) * NH + h) * T + t) * T;
                    dot_columns(p, &q[static_cast<size_t>(t) * hs], kt.data(), hs, T, t + 1);
                    const float mx = max_with(-INFINITY, p, t + 1);
                    if (row_max) row_max[(static_cast<size_t>(b) * NH + h) * T + t] = mx;
                    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                    for (int u = 0; u <= t; u++) {
                        p[u] = exp_fast(p[u] - mx);
                        sum += p[u];
                    }
                    const float inv = 1.0f / sum;
                    std::fill(acc.begin(), acc.end(), 0.0f);
                    for (int u = 0; u <= t; u++) {
                        p[u] *= inv;
                        axpy(acc.data(), p[u], &v[static_cast<size_t>(u) * hs], hs);
                    }
                    for (int u = t + 1; u < T; u++) p[u] = 0.0f;
                    store_row(out + hv.out(b, t, h), acc.data(), hs);
                }
            }
        }
    }
}

template <typename X>
void attention_naive_backward(X* dqkv, const X* dout, const X* qkv, const float* probs, int B, int T, int C, int NH,
                              int NKV) {
    const HeadView hv(T, C, NH, NKV);
    const int hs = hv.hs, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const size_t th = static_cast<size_t>(T) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        std::vector<float> q(th), k(th), vt(th), dq(th), dk(th), dv(th), dO(hs), ds(T);
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int kh = 0; kh < NKV; kh++) {
                for (int t = 0; t < T; t++) load_row(&k[static_cast<size_t>(t) * hs], qkv + hv.k(b, t, kh), hs);
                load_columns(vt.data(), T, qkv + hv.v(b, 0, kh), hv.row(0, 1), T, hs);
                std::fill(dk.begin(), dk.end(), 0.0f);
                std::fill(dv.begin(), dv.end(), 0.0f);
                for (int h = kh * group; h < (kh + 1) * group; h++) {
                    for (int t = 0; t < T; t++) load_row(&q[static_cast<size_t>(t) * hs], qkv + hv.q(b, t, h), hs);
                    std::fill(dq.begin(), dq.end(), 0.0f);
                    for (int t = 0; t < T; t++) {
                        const float* p = probs + ((static_cast<size_t>(b) * NH + h) * T + t) * T;
                        load_row(dO.data(), dout + hv.out(b, t, h), hs);
                        dot_columns(ds.data(), dO.data(), vt.data(), hs, T, t + 1);  // dp = dO_t . v
                        float pdp = 0.0f;
#pragma omp simd reduction(+ : pdp)
                        for (int u = 0; u <= t; u++) pdp += p[u] * ds[u];
#pragma omp simd
                        for (int u = 0; u <= t; u++) ds[u] = p[u] * (ds[u] - pdp) * scale;
                        float* dqt = &dq[static_cast<size_t>(t) * hs];
                        const float* qt = &q[static_cast<size_t>(t) * hs];
                        for (int u = 0; u <= t; u++) {
                            const size_t ou = static_cast<size_t>(u) * hs;
                            axpy(&dv[ou], p[u], dO.data(), hs);
                            axpy(dqt, ds[u], &k[ou], hs);
                            axpy(&dk[ou], ds[u], qt, hs);
                        }
                    }
                    for (int t = 0; t < T; t++) store_row(dqkv + hv.q(b, t, h), &dq[static_cast<size_t>(t) * hs], hs);
                }
                for (int t = 0; t < T; t++) {
                    store_row(dqkv + hv.k(b, t, kh), &dk[static_cast<size_t>(t) * hs], hs);
                    store_row(dqkv + hv.v(b, t, kh), &dv[static_cast<size_t>(t) * hs], hs);
                }
            }
        }
    }
}

template void attention_naive_forward<float>(float*, float*, float*, const float*, int, int, int, int, int);
template void attention_naive_forward<bf16>(bf16*, float*, float*, const bf16*, int, int, int, int, int);
template void attention_naive_backward<float>(float*, const float*, const float*, const float*, int, int, int, int,
                                              int);
template void attention_naive_backward<bf16>(bf16*, const bf16*, const bf16*, const float*, int, int, int, int, int);

}  // namespace sixnd::cpu
