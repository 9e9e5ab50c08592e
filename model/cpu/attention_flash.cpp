// Causal self-attention in the FlashAttention style: never materialises T x T; saves only the
// log-sum-exp lse[B,NH,T] of each query row.
// forward: parallel over (b, head, query tile of kTile rows). The query tile stays resident
//   while key/value tiles stream past, up to the diagonal (tiles above it are skipped); each
//   row keeps a running max m, sum l and unnormalised output o, rescaled by exp(m_old - m_new)
//   when the max grows. out = o / l, lse = m + log l.
// backward: parallel over (b, head). D = rowsum(dout * out); for each key tile (resident with
//   its dK, dV accumulators) the query tiles on and below the diagonal stream past:
//   P = exp(q k^T / sqrt(hs) - lse), dV += P^T dO, dS = P (dO V^T - D), dK += dS^T q, dQ += dS k.
//   Besides the tiles, a thread holds its head's q, dO and dQ in FP32 ([T,hs] each): O(T).
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/cpu/attention.h"
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {
namespace {
constexpr int kTile = 32;
}

template <typename X>
void attention_flash_forward(X* out, float* lse, float* row_max, const X* qkv, int B, int T, int C, int NH) {
    const HeadView hv{T, C, C / NH};
    const int hs = hv.hs;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const int tiles = (T + kTile - 1) / kTile;
    const size_t tile = static_cast<size_t>(kTile) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        std::vector<float> q(tile), o(tile), kt(tile), v(tile), s(kTile), m(kTile), l(kTile);
#pragma omp for collapse(3) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                for (int qt = 0; qt < tiles; qt++) {
                    const int i0 = qt * kTile;
                    const int rows = std::min(kTile, T - i0);
                    for (int r = 0; r < rows; r++)
                        load_row(&q[static_cast<size_t>(r) * hs], qkv + hv.qkv(b, i0 + r, h), hs, scale);
                    std::fill(o.begin(), o.end(), 0.0f);
                    std::fill(m.begin(), m.end(), -INFINITY);
                    std::fill(l.begin(), l.end(), 0.0f);
                    for (int j0 = 0; j0 < i0 + rows; j0 += kTile) {
                        const int cols = std::min(kTile, T - j0);
                        for (int c = 0; c < cols; c++) {
                            const size_t src = hv.qkv(b, j0 + c, h);
                            load_column(kt.data(), kTile, c, qkv + src + C, hs);
                            load_row(&v[static_cast<size_t>(c) * hs], qkv + src + 2 * C, hs);
                        }
                        for (int r = 0; r < rows; r++) {
                            const int valid = std::min(cols, i0 + r - j0 + 1);  // causal mask
                            if (valid <= 0) continue;
                            // All kTile columns: a fixed trip count keeps the scores in registers;
                            // columns past `valid` (stale or masked) are never read.
                            dot_columns(s.data(), &q[static_cast<size_t>(r) * hs], kt.data(), hs, kTile, kTile);
                            float mx = m[r];
                            for (int c = 0; c < valid; c++) mx = s[c] > mx ? s[c] : mx;
                            const float alpha = exp_fast(m[r] - mx);
                            float* orow = &o[static_cast<size_t>(r) * hs];
                            for (int i = 0; i < hs; i++) orow[i] *= alpha;
                            float sum = 0.0f;
                            for (int c = 0; c < valid; c++) {
                                const float p = exp_fast(s[c] - mx);
                                sum += p;
                                axpy(orow, p, &v[static_cast<size_t>(c) * hs], hs);
                            }
                            l[r] = l[r] * alpha + sum;
                            m[r] = mx;
                        }
                    }
                    for (int r = 0; r < rows; r++) {
                        store_row(out + hv.out(b, i0 + r, h), &o[static_cast<size_t>(r) * hs], hs, 1.0f / l[r]);
                        lse[(static_cast<size_t>(b) * NH + h) * T + i0 + r] = m[r] + std::log(l[r]);
                        if (row_max) row_max[(static_cast<size_t>(b) * NH + h) * T + i0 + r] = m[r];
                    }
                }
            }
        }
    }
}

template <typename X>
void attention_flash_backward(X* dqkv, const X* dout, const X* qkv, const X* out, const float* lse, int B, int T, int C,
                              int NH) {
    const HeadView hv{T, C, C / NH};
    const int hs = hv.hs;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const size_t th = static_cast<size_t>(T) * hs;
    const size_t tile = static_cast<size_t>(kTile) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        std::vector<float> q(th), dO(th), dq(th), D(T), k(tile), kt(tile), vt(tile), dk(tile), dv(tile), orow(hs),
            sp(kTile), sds(kTile);
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                const float* L = lse + (static_cast<size_t>(b) * NH + h) * T;
                // q is kept pre-scaled, exactly as in forward, so the scores recompute to the same bits.
                for (int t = 0; t < T; t++) {
                    float* dOt = &dO[static_cast<size_t>(t) * hs];
                    load_row(&q[static_cast<size_t>(t) * hs], qkv + hv.qkv(b, t, h), hs, scale);
                    load_row(dOt, dout + hv.out(b, t, h), hs);
                    load_row(orow.data(), out + hv.out(b, t, h), hs);
                    D[t] = dot(dOt, orow.data(), hs);
                }
                std::fill(dq.begin(), dq.end(), 0.0f);
                for (int j0 = 0; j0 < T; j0 += kTile) {
                    const int cols = std::min(kTile, T - j0);
                    for (int c = 0; c < cols; c++) {
                        const size_t src = hv.qkv(b, j0 + c, h);
                        load_row(&k[static_cast<size_t>(c) * hs], qkv + src + C, hs);
                        load_column(kt.data(), kTile, c, qkv + src + C, hs);
                        load_column(vt.data(), kTile, c, qkv + src + 2 * C, hs);
                    }
                    std::fill(dk.begin(), dk.end(), 0.0f);
                    std::fill(dv.begin(), dv.end(), 0.0f);
                    // Query tiles strictly above this key tile's diagonal see none of its keys.
                    for (int i0 = j0; i0 < T; i0 += kTile) {
                        const int rows = std::min(kTile, T - i0);
                        for (int r = 0; r < rows; r++) {
                            const int i = i0 + r;
                            const int valid = std::min(cols, i - j0 + 1);
                            const float* qi = &q[static_cast<size_t>(i) * hs];
                            const float* dOi = &dO[static_cast<size_t>(i) * hs];
                            float* dqi = &dq[static_cast<size_t>(i) * hs];
                            dot_columns(sp.data(), qi, kt.data(), hs, kTile, kTile);
                            dot_columns(sds.data(), dOi, vt.data(), hs, kTile, kTile);
                            // dS without the 1/sqrt(hs): dK gets it through the pre-scaled q,
                            // dQ gets it once at the end.
#pragma omp simd
                            for (int c = 0; c < kTile; c++) {
                                sp[c] = exp_fast(sp[c] - L[i]);
                                sds[c] = sp[c] * (sds[c] - D[i]);
                            }
                            for (int c = 0; c < valid; c++) {
                                const size_t oc = static_cast<size_t>(c) * hs;
                                axpy(&dv[oc], sp[c], dOi, hs);
                                axpy(dqi, sds[c], &k[oc], hs);
                                axpy(&dk[oc], sds[c], qi, hs);
                            }
                        }
                    }
                    for (int c = 0; c < cols; c++) {
                        const size_t dst = hv.qkv(b, j0 + c, h);
                        store_row(dqkv + dst + C, &dk[static_cast<size_t>(c) * hs], hs);
                        store_row(dqkv + dst + 2 * C, &dv[static_cast<size_t>(c) * hs], hs);
                    }
                }
                for (int t = 0; t < T; t++)
                    store_row(dqkv + hv.qkv(b, t, h), &dq[static_cast<size_t>(t) * hs], hs, scale);
            }
        }
    }
}

template void attention_flash_forward<float>(float*, float*, float*, const float*, int, int, int, int);
template void attention_flash_forward<bf16>(bf16*, float*, float*, const bf16*, int, int, int, int);
template void attention_flash_backward<float>(float*, const float*, const float*, const float*, const float*, int, int,
                                              int, int);
template void attention_flash_backward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, const float*, int, int, int,
                                             int);

}  // namespace sixnd::cpu
