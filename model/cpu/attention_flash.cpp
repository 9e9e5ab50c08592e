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
// against one loaded tile (dot_columns_rows), then several output rows (P v, dS k) or columns
// (P^T dO, dS^T q) at once in registers, each row of the block's operand loaded once for all of
// them (accumulate_rows_multi). Every output element still sums its terms in the order of a
// row-at-a-time loop, so the blocking changes the speed, not the bits.
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/cpu/attention.h"
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {
namespace {
constexpr int kTile = 32;

// sum[r] = p[r][0] + p[r][1] + ... + p[r][valid(r) - 1], in that order, for the rows of a block of
// probabilities (row r at p + r * kTile; valid(r) >= 1, growing with r). A row's sum is a chain
// of dependent adds: eight rows at a time keep eight chains in flight, where one row at a time
// waited on each add.
template <typename Valid>
void row_sums(float* sum, const float* p, int rows, Valid valid) {
    constexpr int G = 8;
    int r0 = 0;
    for (; r0 + G <= rows; r0 += G) {
        float acc[G] = {};
        const int shared = valid(r0);
        for (int c = 0; c < shared; c++)
            for (int j = 0; j < G; j++) acc[j] += p[static_cast<size_t>(r0 + j) * kTile + c];
        for (int j = 0; j < G; j++) {
            for (int c = shared; c < valid(r0 + j); c++) acc[j] += p[static_cast<size_t>(r0 + j) * kTile + c];
            sum[r0 + j] = acc[j];
        }
    }
    for (; r0 < rows; r0++) {
        float acc = 0.0f;
        for (int c = 0; c < valid(r0); c++) acc += p[static_cast<size_t>(r0) * kTile + c];
        sum[r0] = acc;
    }
}

// y[r][0, hs) += sum over c < valid(r), in order, of w[r][c] * x[c][0, hs), for the rows r < rows
// of a block (y row r at y + r * hs, w row r at w + r * kTile, x row c at x + c * hs; valid(r)
// grows with r): the probabilities times the values in forward, dS times the keys for dQ in
// backward. kAccumulateRows rows at a time over the columns they all see (the first row's), then
// each over the rest of its own; each element's terms stay in order of c.
template <typename Valid>
void accumulate_causal_rows(float* y, const float* w, const float* x, int hs, int rows, Valid valid) {
    int r0 = 0;
    for (; r0 + kAccumulateRows <= rows; r0 += kAccumulateRows) {
        float* ys[kAccumulateRows];
        const float* ws[kAccumulateRows];
        for (int j = 0; j < kAccumulateRows; j++) {
            ys[j] = y + static_cast<size_t>(r0 + j) * hs;
            ws[j] = w + static_cast<size_t>(r0 + j) * kTile;
        }
        const int shared = valid(r0);
        accumulate_rows_multi(ys, ws, 1, x, hs, shared, hs);
        for (int j = 0; j < kAccumulateRows; j++)
            if (valid(r0 + j) > shared)
                accumulate_rows(ys[j], ws[j] + shared, 1, x + static_cast<size_t>(shared) * hs, hs, valid(r0 + j) - shared,
                                hs);
    }
    for (; r0 < rows; r0++)
        accumulate_rows(y + static_cast<size_t>(r0) * hs, w + static_cast<size_t>(r0) * kTile, 1, x, hs, valid(r0), hs);
}

// y[c][0, hs) += sum over first(c) <= r < rows, in order, of w[r][c] * x[r][0, hs), for the
// columns c < cols of a block (w row r at w + r * kTile; first(c) grows with c): P^T dO into dV
// and dS^T q into dK in backward. kAccumulateRows columns at a time over the rows they all see
// (from the last one's first), after each has summed the rows before those on its own.
template <typename First>
void accumulate_causal_columns(float* y, const float* w, const float* x, int hs, int rows, int cols, First first) {
    int c0 = 0;
    for (; c0 + kAccumulateRows <= cols; c0 += kAccumulateRows) {
        const int shared = std::min(rows, first(c0 + kAccumulateRows - 1));
        float* ys[kAccumulateRows];
        const float* ws[kAccumulateRows];
        for (int j = 0; j < kAccumulateRows; j++) {
            const int c = c0 + j, f = std::min(first(c), shared);
            ys[j] = y + static_cast<size_t>(c) * hs;
            if (shared > f)
                accumulate_rows(ys[j], w + static_cast<size_t>(f) * kTile + c, kTile, x + static_cast<size_t>(f) * hs, hs,
                                shared - f, hs);
            ws[j] = w + static_cast<size_t>(shared) * kTile + c;
        }
        accumulate_rows_multi(ys, ws, kTile, x + static_cast<size_t>(shared) * hs, hs, rows - shared, hs);
    }
    for (; c0 < cols; c0++) {
        const int f = std::min(first(c0), rows);
        accumulate_rows(y + static_cast<size_t>(c0) * hs, w + static_cast<size_t>(f) * kTile + c0, kTile,
                        x + static_cast<size_t>(f) * hs, hs, rows - f, hs);
    }
}

}  // namespace

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
        std::vector<float> q(tile), o(tile), kt(tile), v(tile), s(kTile * kTile), m(kTile), l(kTile), alpha(kTile),
            sum(kTile);
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
                            const float* qr[kScoreRows];
                            for (int j = 0; j < kScoreRows; j++) {
                                const int r = std::min(r0 + j, rows - 1);  // past the last row: it again
                                sr[j] = &s[static_cast<size_t>(r) * kTile];
                                qr[j] = &q[static_cast<size_t>(r) * hs];
                            }
                            dot_columns_rows<kTile>(sr, qr, kt.data(), hs, kTile);
                        }
                        // Row r sees keys c < valid(r), at least one: j0 <= i0. Its new maximum
                        // rescales what it has summed so far; its scores become probabilities.
                        const auto valid = [&](int r) { return std::min(cols, i0 + r - j0 + 1); };
                        for (int r = 0; r < rows; r++) {
                            float* sr = &s[static_cast<size_t>(r) * kTile];
                            const float mx = max_with(m[r], sr, valid(r));
                            alpha[r] = exp_fast(m[r] - mx);
                            float* orow = &o[static_cast<size_t>(r) * hs];
                            for (int i = 0; i < hs; i++) orow[i] *= alpha[r];
#pragma omp simd
                            for (int c = 0; c < valid(r); c++) sr[c] = exp_fast(sr[c] - mx);
                            m[r] = mx;
                        }
                        row_sums(sum.data(), s.data(), rows, valid);
                        for (int r = 0; r < rows; r++) l[r] = l[r] * alpha[r] + sum[r];
                        accumulate_causal_rows(o.data(), s.data(), v.data(), hs, rows, valid);
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
                            // Two products a row (q k^T and dO v^T), each kScoreRows rows at a
                            // time against its own tile (the two tiles' rows in one call leave
                            // fewer rows to share each load: 0.77x the backward's time this way
                            // on a Zen 5 core).
                            for (int r0 = 0; r0 < rows; r0 += kScoreRows) {
                                float *sr[kScoreRows], *dr[kScoreRows];
                                const float *qr[kScoreRows], *dor[kScoreRows];
                                for (int j = 0; j < kScoreRows; j++) {
                                    const int r = std::min(r0 + j, rows - 1);  // past the last row: it again
                                    const size_t at = (static_cast<size_t>(i0) + r) * hs;
                                    sr[j] = &sp[static_cast<size_t>(r) * kTile];
                                    qr[j] = &q[at];
                                    dr[j] = &sds[static_cast<size_t>(r) * kTile];
                                    dor[j] = &dO[at];
                                }
                                dot_columns_rows<kTile>(sr, qr, kt.data(), hs, kTile);
                                dot_columns_rows<kTile>(dr, dor, vt.data(), hs, kTile);
                                for (int r = r0; r < std::min(r0 + kScoreRows, rows); r++) {
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
                            const auto valid = [&](int r) { return std::min(cols, i0 + r - j0 + 1); };
                            const auto first = [&](int c) { return std::max(0, c - (i0 - j0)); };
                            const size_t at = static_cast<size_t>(i0) * hs;
                            accumulate_causal_rows(&dq[at], sds.data(), k.data(), hs, rows, valid);
                            accumulate_causal_columns(dvt, sp.data(), &dO[at], hs, rows, cols, first);
                            accumulate_causal_columns(dkt, sds.data(), &q[at], hs, rows, cols, first);
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
