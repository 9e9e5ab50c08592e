// Causal self-attention in the FlashAttention style: never materialises T x T; saves only the
// log-sum-exp lse[B,NH,T] of each query row. qkv[B,T,C + 2*NKV*hs]; query head h attends with
// kv head h / (NH/NKV) (grouped-query).
// forward: parallel over (b, head, query tile of kTile rows). The query tile stays resident
//   while key/value tiles stream past, up to the diagonal (tiles above it are skipped); each
//   row keeps a running max m, sum l and unnormalised output o, rescaled by exp(m_old - m_new)
//   when the max grows. out = o / l, lse = m + log l.
// backward: parallel over (b, kv head), which owns the dK, dV of its group of NH/NKV query heads
//   (so no two threads write one kv head). For each query head of the group in turn:
//   D = rowsum(dout * out); for each key tile the query tiles on and below the diagonal stream
//   past: P = exp(q k^T / sqrt(hs) - lse), dV += P^T dO, dS = P (dO V^T - D), dK += dS^T q,
//   dQ += dS k. Besides the tiles, a thread holds its query head's q, dO, dQ and its kv head's
//   dK, dV in FP32 ([T,hs] each): O(T).
// Both directions work a kTile x kTile block of scores at a time: scores several rows at once
// (dot_columns_rows), then each output row summed over the block's rows in registers
// (accumulate_rows). Every output element still sums its terms in the order of a row-at-a-time
// loop, so the blocking changes the speed, not the bits.
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
void attention_flash_forward(X* out, float* lse, float* row_max, const X* qkv, int B, int T, int C, int NH,
                             int NKV) {
    const HeadView hv(T, C, NH, NKV);
    const int hs = hv.hs, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const int tiles = (T + kTile - 1) / kTile;
    const size_t tile = static_cast<size_t>(kTile) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        std::vector<float> q(tile), o(tile), kt(tile), v(tile), s(kTile * kTile), m(kTile), l(kTile);
#pragma omp for collapse(3) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                for (int qt = 0; qt < tiles; qt++) {
                    const int i0 = qt * kTile;
                    const int rows = std::min(kTile, T - i0);
                    for (int r = 0; r < rows; r++)
                        load_row(&q[static_cast<size_t>(r) * hs], qkv + hv.q(b, i0 + r, h), hs, scale);
                    std::fill(o.begin(), o.end(), 0.0f);
                    std::fill(m.begin(), m.end(), -INFINITY);
                    std::fill(l.begin(), l.end(), 0.0f);
                    for (int j0 = 0; j0 < i0 + rows; j0 += kTile) {
                        const int cols = std::min(kTile, T - j0);
                        load_columns(kt.data(), kTile, qkv + hv.k(b, j0, h / group), hv.row(0, 1), cols, hs);
                        for (int c = 0; c < cols; c++)
                            load_row(&v[static_cast<size_t>(c) * hs], qkv + hv.v(b, j0 + c, h / group), hs);
                        // All kTile columns: a fixed trip count keeps the scores in registers;
                        // columns past a row's `valid` (stale or masked) are never read.
                        for (int r0 = 0; r0 < rows; r0 += kScoreRows) {
                            float* sr[kScoreRows];
                            const float *qr[kScoreRows], *ktr[kScoreRows];
                            for (int j = 0; j < kScoreRows; j++) {
                                const int r = std::min(r0 + j, rows - 1);  // past the last row: it again
                                sr[j] = &s[static_cast<size_t>(r) * kTile];
                                qr[j] = &q[static_cast<size_t>(r) * hs];
                                ktr[j] = kt.data();
                            }
                            dot_columns_rows<kTile>(sr, qr, ktr, hs, kTile);
                        }
                        for (int r = 0; r < rows; r++) {
                            const int valid = std::min(cols, i0 + r - j0 + 1);  // causal mask
                            if (valid <= 0) continue;
                            float* sr = &s[static_cast<size_t>(r) * kTile];
                            const float mx = max_with(m[r], sr, valid);
                            const float alpha = exp_fast(m[r] - mx);
                            float* orow = &o[static_cast<size_t>(r) * hs];
                            for (int i = 0; i < hs; i++) orow[i] *= alpha;
#pragma omp simd
                            for (int c = 0; c < valid; c++) sr[c] = exp_fast(sr[c] - mx);
                            float sum = 0.0f;
                            for (int c = 0; c < valid; c++) sum += sr[c];
                            accumulate_rows(orow, sr, 1, v.data(), hs, valid, hs);
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
                              int NH, int NKV) {
    const HeadView hv(T, C, NH, NKV);
    const int hs = hv.hs, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const size_t th = static_cast<size_t>(T) * hs;
    const size_t tile = static_cast<size_t>(kTile) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        std::vector<float> q(th), dO(th), dq(th), dk(th), dv(th), D(T), k(tile), kt(tile), vt(tile), orow(hs),
            sp(kTile * kTile), sds(kTile * kTile);
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int kh = 0; kh < NKV; kh++) {
                std::fill(dk.begin(), dk.end(), 0.0f);
                std::fill(dv.begin(), dv.end(), 0.0f);
                for (int h = kh * group; h < (kh + 1) * group; h++) {
                    const float* L = lse + (static_cast<size_t>(b) * NH + h) * T;
                    // q is kept pre-scaled, exactly as in forward, so the scores recompute to the same bits.
                    for (int t = 0; t < T; t++) {
                        float* dOt = &dO[static_cast<size_t>(t) * hs];
                        load_row(&q[static_cast<size_t>(t) * hs], qkv + hv.q(b, t, h), hs, scale);
                        load_row(dOt, dout + hv.out(b, t, h), hs);
                        load_row(orow.data(), out + hv.out(b, t, h), hs);
                        D[t] = dot(dOt, orow.data(), hs);
                    }
                    std::fill(dq.begin(), dq.end(), 0.0f);
                    for (int j0 = 0; j0 < T; j0 += kTile) {
                        const int cols = std::min(kTile, T - j0);
                        for (int c = 0; c < cols; c++)
                            load_row(&k[static_cast<size_t>(c) * hs], qkv + hv.k(b, j0 + c, kh), hs);
                        load_columns(kt.data(), kTile, qkv + hv.k(b, j0, kh), hv.row(0, 1), cols, hs);
                        load_columns(vt.data(), kTile, qkv + hv.v(b, j0, kh), hv.row(0, 1), cols, hs);
                        float* dkt = &dk[static_cast<size_t>(j0) * hs];
                        float* dvt = &dv[static_cast<size_t>(j0) * hs];
                        // Query tiles strictly above this key tile's diagonal see none of its keys.
                        for (int i0 = j0; i0 < T; i0 += kTile) {
                            const int rows = std::min(kTile, T - i0);
                            // P and dS of the block, row r at sp[r * kTile], sds[r * kTile]. dS
                            // without the 1/sqrt(hs): dK gets it through the pre-scaled q, dQ
                            // gets it once at the end.
                            // Two products a row (q k^T and dO v^T), kScoreRows / 2 rows at a time.
                            constexpr int kRowsAtOnce = kScoreRows / 2;
                            for (int r0 = 0; r0 < rows; r0 += kRowsAtOnce) {
                                float* sr[kScoreRows];
                                const float *qr[kScoreRows], *ktr[kScoreRows];
                                for (int j = 0; j < kRowsAtOnce; j++) {
                                    const int r = std::min(r0 + j, rows - 1);  // past the last row: it again
                                    const size_t at = (static_cast<size_t>(i0) + r) * hs;
                                    sr[2 * j] = &sp[static_cast<size_t>(r) * kTile];
                                    qr[2 * j] = &q[at];
                                    ktr[2 * j] = kt.data();
                                    sr[2 * j + 1] = &sds[static_cast<size_t>(r) * kTile];
                                    qr[2 * j + 1] = &dO[at];
                                    ktr[2 * j + 1] = vt.data();
                                }
                                dot_columns_rows<kTile>(sr, qr, ktr, hs, kTile);
                                for (int r = r0; r < std::min(r0 + kRowsAtOnce, rows); r++) {
                                    float* p = &sp[static_cast<size_t>(r) * kTile];
                                    float* ds = &sds[static_cast<size_t>(r) * kTile];
                                    const int i = i0 + r;
#pragma omp simd
                                    for (int c = 0; c < kTile; c++) {
                                        p[c] = exp_fast(p[c] - L[i]);
                                        ds[c] = p[c] * (ds[c] - D[i]);
                                    }
                                }
                            }
                            // Row r sees keys c < valid(r) = min(cols, i0 + r - j0 + 1); key c is
                            // seen by rows r >= first(c) = c - (i0 - j0) (all rows below the diagonal).
                            for (int r = 0; r < rows; r++) {
                                const int valid = std::min(cols, i0 + r - j0 + 1);
                                accumulate_rows(&dq[(static_cast<size_t>(i0) + r) * hs], &sds[static_cast<size_t>(r) * kTile], 1,
                                                k.data(), hs, valid, hs);
                            }
                            for (int c = 0; c < cols; c++) {
                                const int first = std::max(0, c - (i0 - j0));
                                if (first >= rows) continue;
                                const size_t oc = static_cast<size_t>(c) * hs, at = (static_cast<size_t>(i0) + first) * hs;
                                const size_t w = static_cast<size_t>(first) * kTile + c;
                                accumulate_rows(&dvt[oc], &sp[w], kTile, &dO[at], hs, rows - first, hs);
                                accumulate_rows(&dkt[oc], &sds[w], kTile, &q[at], hs, rows - first, hs);
                            }
                        }
                    }
                    for (int t = 0; t < T; t++)
                        store_row(dqkv + hv.q(b, t, h), &dq[static_cast<size_t>(t) * hs], hs, scale);
                }
                for (int t = 0; t < T; t++) {
                    store_row(dqkv + hv.k(b, t, kh), &dk[static_cast<size_t>(t) * hs], hs);
                    store_row(dqkv + hv.v(b, t, kh), &dv[static_cast<size_t>(t) * hs], hs);
                }
            }
        }
    }
}

template void attention_flash_forward<float>(float*, float*, float*, const float*, int, int, int, int, int);
template void attention_flash_forward<bf16>(bf16*, float*, float*, const bf16*, int, int, int, int, int);
template void attention_flash_backward<float>(float*, const float*, const float*, const float*, const float*, int, int,
                                              int, int, int);
template void attention_flash_backward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, const float*, int, int, int,
                                             int, int);

}  // namespace sixnd::cpu
