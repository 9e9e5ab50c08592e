// Helpers shared by the causal attention kernels: where a head's q, k, v live in the packed
// qkv[B,T,C + 2*NKV*hs] buffer (grouped-query: query head h reads kv head h / (NH/NKV)), and the small loops over a head's channels. Keys (and values, where
// they are dotted with a row) are held transposed, [hs][ld], so that the scores of one query
// against many keys are a vectorised loop across keys rather than one horizontal sum per key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/bf16.h"
#include "model/cpu/simd.h"

namespace sixnd::cpu {

struct HeadView {
    int T, C, hs, NKV;
    HeadView(int T_, int C_, int NH, int NKV_) : T(T_), C(C_), hs(C_ / NH), NKV(NKV_) {}
    size_t row(int b, int t) const { return (static_cast<size_t>(b) * T + t) * (C + 2 * static_cast<size_t>(NKV) * hs); }
    // Offsets in qkv of query head h, and of key / value head kh, at (b, t).
    size_t q(int b, int t, int h) const { return row(b, t) + static_cast<size_t>(h) * hs; }
    size_t k(int b, int t, int kh) const { return row(b, t) + C + static_cast<size_t>(kh) * hs; }
    size_t v(int b, int t, int kh) const { return row(b, t) + C + (static_cast<size_t>(NKV) + kh) * hs; }
    // Offset of (b, t, head h) in out[B,T,C].
    size_t out(int b, int t, int h) const { return (static_cast<size_t>(b) * T + t) * C + static_cast<size_t>(h) * hs; }
};

inline float dot(const float* a, const float* b, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

// s[c] = sum_i q[i] * kt[i * ld + c] for c < n: one row against n transposed keys.
inline void dot_columns(float* s, const float* q, const float* kt, int hs, int ld, int n) {
    for (int c = 0; c < n; c++) s[c] = 0.0f;
    for (int i = 0; i < hs; i++) {
        const float qi = q[i];
        const float* row = kt + static_cast<size_t>(i) * ld;
#pragma omp simd
        for (int c = 0; c < n; c++) s[c] += qi * row[c];
    }
}

// dot_columns for R rows at once against one transposed tile, each of its rows loaded once for
// all R: s[j][c] = q[j] . kt[:, c] for c < N (a multiple of kWide), j < R. R rows give R times
// the independent FMA chains of one (kScoreRows fills the FMA units at the build's width without
// running out of registers: with AVX-512, 8 rows of 2 vectors beside the tile's 2; on a Zen 5
// core the flash forward took 10-12% less time with 8 than with 4); each sum runs in
// dot_columns' order, so R and the width change the speed, not the bits.
constexpr int kScoreRows = kWide == 16 ? 8 : 2;
template <int N, int R>
inline void dot_columns_rows(float* const (&s)[R], const float* const (&q)[R], const float* kt, int hs, int ld) {
    static_assert(N % kWide == 0, "whole vectors");
    constexpr int V = N / kWide;
    f32xw a[R][V] = {};
    for (int i = 0; i < hs; i++) {
        f32xw t[V];
        for (int v = 0; v < V; v++) t[v] = load_vec<f32xw>(kt + static_cast<size_t>(i) * ld + kWide * v);
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            const float x = q[j][i];
#pragma GCC unroll 8
            for (int v = 0; v < V; v++) a[j][v] += x * t[v];
        }
    }
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) store_vec(s[j] + kWide * v, a[j][v]);
}

#if defined(__AVX512BF16__)
// The flash kernels' products on BF16 dot products, where the build has them (flash_on_bf16_dots
// says when they run): bf16 rows taken as pairs, pair p being values 2p and 2p + 1 — one 32-bit
// unit, what VDPBF16PS multiplies, both products (exact in FP32) added into one FP32 lane;
// denormal inputs count as zero. Half the instructions of FP32 FMAs on the same bf16 numbers, and
// nothing to widen.
constexpr bool kBf16Dots = true;

// Rows [0, cols) of `pairs` pairs each (row c at src + c * stride) as the columns of a
// transposed [pairs][ld] tile of pairs: dst[p * ld + c] = pair p of row c. Bits moved, never
// converted: 8 x 8 blocks of pairs through registers (transpose8), the edges one at a time.
inline void load_pair_columns(uint32_t* dst, int ld, const bf16* src, size_t stride, int cols, int pairs) {
    int c0 = 0;
    for (; c0 + 8 <= cols; c0 += 8) {
        int p0 = 0;
        for (; p0 + 8 <= pairs; p0 += 8) {
            f32x8 t[8];
            for (int c = 0; c < 8; c++) std::memcpy(&t[c], src + (c0 + c) * stride + 2 * p0, sizeof t[c]);
            transpose8(t);
            for (int p = 0; p < 8; p++) std::memcpy(dst + static_cast<size_t>(p0 + p) * ld + c0, &t[p], sizeof t[p]);
        }
        for (int c = c0; c < c0 + 8; c++)
            for (int p = p0; p < pairs; p++) std::memcpy(dst + static_cast<size_t>(p) * ld + c, src + c * stride + 2 * p, 4);
    }
    for (int c = c0; c < cols; c++)
        for (int p = 0; p < pairs; p++) std::memcpy(dst + static_cast<size_t>(p) * ld + c, src + c * stride + 2 * p, 4);
}

// dot_columns_rows on pairs: s[j][c] = scale * (sum over pairs p, in order, of q[j]'s pair p
// dotted with pt[p * ld + c]) for c < N (a multiple of 16), j < R: each tile row of 16 columns'
// pairs loaded once for all R rows, each row's pair broadcast to the 16 lanes.
template <int N, int R>
inline void dot_pairs_rows(float* const (&s)[R], const bf16* const (&q)[R], const uint32_t* pt, int pairs, int ld,
                           float scale) {
    static_assert(N % 16 == 0, "whole vectors");
    constexpr int V = N / 16;
    __m512 a[R][V];
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) a[j][v] = _mm512_setzero_ps();
    for (int p = 0; p < pairs; p++) {
        __m512bh t[V];
        for (int v = 0; v < V; v++) t[v] = (__m512bh)_mm512_loadu_si512(pt + static_cast<size_t>(p) * ld + 16 * v);
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            int x;
            std::memcpy(&x, q[j] + 2 * p, sizeof x);
            const __m512bh xv = (__m512bh)_mm512_set1_epi32(x);
#pragma GCC unroll 4
            for (int v = 0; v < V; v++) a[j][v] = _mm512_dpbf16_ps(a[j][v], xv, t[v]);
        }
    }
    const __m512 sc = _mm512_set1_ps(scale);
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) _mm512_storeu_ps(s[j] + 16 * v, _mm512_mul_ps(a[j][v], sc));
}

// Eight values of two rows as eight pairs (a[i], b[i]) at dst (16 values).
inline void zip8(bf16* dst, u16x8 a, u16x8 b) {
    const __m128i x = reinterpret_cast<__m128i>(a), y = reinterpret_cast<__m128i>(b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi16(x, y));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 8), _mm_unpackhi_epi16(x, y));
}

// Rows a and b of n bf16 values (n a multiple of 8) zipped into n pairs: dst[i] = (a[i], b[i]),
// the layout in which the dot products weight two rows at once. b null: zeros.
inline void zip_rows(uint32_t* dst, const bf16* a, const bf16* b, int n) {
    for (int i = 0; i < n; i += 8) {
        u16x8 x, y = {};
        std::memcpy(&x, a + i, sizeof x);
        if (b) std::memcpy(&y, b + i, sizeof y);
        zip8(reinterpret_cast<bf16*>(dst + i), x, y);
    }
}

// accumulate_rows_multi on pairs: y[j][0, n) += sum over pairs p < m, in order, of w[j]'s pair p
// (bf16 values w[j][2 p ldw] and the next) dotted with x[p * ldx + 0, n) (pairs of two rows, as
// zip_rows makes them), for n a multiple of 16. R outputs of up to 4 vectors at a time in
// registers, each vector of x loaded once for all R.
template <int V, int R>
inline void accumulate_pairs_block(float* const (&y)[R], const bf16* const (&w)[R], size_t ldw, const uint32_t* x,
                                   size_t ldx, int m, int i0) {
    __m512 acc[R][V];
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) acc[j][v] = _mm512_loadu_ps(y[j] + i0 + 16 * v);
    for (int p = 0; p < m; p++) {
        __m512bh xv[V];
        for (int v = 0; v < V; v++) xv[v] = (__m512bh)_mm512_loadu_si512(x + p * ldx + i0 + 16 * v);
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            int wp;
            std::memcpy(&wp, w[j] + 2 * p * ldw, sizeof wp);
            const __m512bh wv = (__m512bh)_mm512_set1_epi32(wp);
#pragma GCC unroll 4
            for (int v = 0; v < V; v++) acc[j][v] = _mm512_dpbf16_ps(acc[j][v], wv, xv[v]);
        }
    }
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) _mm512_storeu_ps(y[j] + i0 + 16 * v, acc[j][v]);
}
template <int R>
inline void accumulate_pairs(float* const (&y)[R], const bf16* const (&w)[R], size_t ldw, const uint32_t* x, size_t ldx,
                             int m, int n) {
    int i0 = 0;
    for (; i0 + 64 <= n; i0 += 64) accumulate_pairs_block<4, R>(y, w, ldw, x, ldx, m, i0);
    if (i0 + 32 <= n) accumulate_pairs_block<2, R>(y, w, ldw, x, ldx, m, i0), i0 += 32;
    if (i0 + 16 <= n) accumulate_pairs_block<1, R>(y, w, ldw, x, ldx, m, i0);
}
#else
constexpr bool kBf16Dots = false;
#endif

// For each of R outputs j: y[j][i0, i0 + LV) += sum over c < m, in order, of w[j][c * ldw] *
// x[c * ldx + i0, + LV), the outputs in registers as V vectors of type Vec (L floats each), each
// row of x loaded once for all R.
template <typename Vec, int V, int R>
inline void accumulate_block(float* const (&y)[R], const float* const (&w)[R], size_t ldw, const float* x, size_t ldx,
                             int m, int i0) {
    constexpr int L = sizeof(Vec) / sizeof(float);
    Vec acc[R][V];
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) acc[j][v] = load_vec<Vec>(y[j] + i0 + L * v);
    for (int c = 0; c < m; c++) {
        Vec xv[V];
        for (int v = 0; v < V; v++) xv[v] = load_vec<Vec>(x + c * ldx + i0 + L * v);
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            const float wc = w[j][c * ldw];
#pragma GCC unroll 8
            for (int v = 0; v < V; v++) acc[j][v] += wc * xv[v];
        }
    }
    for (int j = 0; j < R; j++)
        for (int v = 0; v < V; v++) store_vec(y[j] + i0 + L * v, acc[j][v]);
}

// y[0, n) += sum over c < m, in order, of w[c * ldw] * x[c * ldx + 0, n): m rows of x, weighted.
// Per element this is axpy(y, w[c], x row c) for c = 0, 1, ... (same bits), but y stays in
// registers across the m rows instead of being loaded and stored for each: blocks of the
// build's widest vectors, then eight lanes, then a tail that rounds as the vector lanes do
// (fma_as_vectors).
inline void accumulate_rows(float* y, const float* w, size_t ldw, const float* x, size_t ldx, int m, int n) {
    float* const ys[1] = {y};
    const float* const ws[1] = {w};
    int i0 = 0;
    for (; i0 + 8 * kWide <= n; i0 += 8 * kWide) accumulate_block<f32xw, 8>(ys, ws, ldw, x, ldx, m, i0);
    if (i0 + 4 * kWide <= n) accumulate_block<f32xw, 4>(ys, ws, ldw, x, ldx, m, i0), i0 += 4 * kWide;
    if (i0 + 2 * kWide <= n) accumulate_block<f32xw, 2>(ys, ws, ldw, x, ldx, m, i0), i0 += 2 * kWide;
    if (i0 + kWide <= n) accumulate_block<f32xw, 1>(ys, ws, ldw, x, ldx, m, i0), i0 += kWide;
    if (kWide > 8 && i0 + 8 <= n) accumulate_block<f32x8, 1>(ys, ws, ldw, x, ldx, m, i0), i0 += 8;
    for (; i0 < n; i0++) {
        float acc = y[i0];
        for (int c = 0; c < m; c++) acc = fma_as_vectors(w[c * ldw], x[c * ldx + i0], acc);
        y[i0] = acc;
    }
}

// accumulate_rows for R outputs that weight the same m rows of x: y[j][0, n) += sum over c < m,
// in order, of w[j][c * ldw] * x[c * ldx + 0, n). Each row of x is loaded once for all R (one
// output at a time loads a vector of x per FMA, and the loads, not the FMAs, set the pace), and
// each element sums its terms as accumulate_rows does, so the bits are the same.
// kAccumulateRows: with AVX-512, 6 outputs of 4 vectors (24 accumulators, 4 of x and a broadcast
// in 32 registers; 4 or 8 outputs were slower on a Zen 5 core). AVX2's 16 registers hold no
// second output beside x, and two outputs with x read from memory were no faster: one.
constexpr int kAccumulateRows = kWide == 16 ? 6 : 1;
template <int R>
inline void accumulate_rows_multi(float* const (&y)[R], const float* const (&w)[R], size_t ldw, const float* x,
                                  size_t ldx, int m, int n) {
    if constexpr (R == 1) {
        accumulate_rows(y[0], w[0], ldw, x, ldx, m, n);
        return;
    }
    int i0 = 0;
    for (; i0 + 4 * kWide <= n; i0 += 4 * kWide) accumulate_block<f32xw, 4>(y, w, ldw, x, ldx, m, i0);
    if (i0 + 2 * kWide <= n) accumulate_block<f32xw, 2>(y, w, ldw, x, ldx, m, i0), i0 += 2 * kWide;
    if (i0 + kWide <= n) accumulate_block<f32xw, 1>(y, w, ldw, x, ldx, m, i0), i0 += kWide;
    if (i0 < n)
        for (int j = 0; j < R; j++) accumulate_rows(y[j] + i0, w[j], ldw, x + i0, ldx, m, n - i0);
}

// The largest of m and s[0, n), as `m = s[c] > m ? s[c] : m` over c finds it (a NaN never
// wins), eight lanes at a time: the scalar loop is a chain of dependent compares, 9% of the
// flash forward's time. Ties between +0 and -0 may resolve to the other zero, which no sum or
// exponential downstream tells apart. The row maximum of both attention kernels.
inline float max_with(float m, const float* s, int n) {
    f32x8 acc = {m, m, m, m, m, m, m, m};
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const f32x8 x = load8(s + c);
        acc = x > acc ? x : acc;
    }
    for (int k = 0; k < 8; k++) m = acc[k] > m ? acc[k] : m;
    for (; c < n; c++) m = s[c] > m ? s[c] : m;
    return m;
}

// y += alpha * x
inline void axpy(float* y, float alpha, const float* x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}

template <typename X>
inline void load_row(float* dst, const X* src, int n, float scale = 1.0f) {
#pragma omp simd
    for (int i = 0; i < n; i++) dst[i] = to_f32(src[i]) * scale;
}

// Rows [0, cols) of n values each (row c at src + c * stride) as the columns of a transposed
// [n][ld] tile: dst[i * ld + c] = src[c * stride + i]. 8 x 8 blocks go through registers
// (transpose8), the edges one value at a time.
template <typename X>
inline void load_columns(float* dst, int ld, const X* src, size_t stride, int cols, int n) {
    int c0 = 0;
    for (; c0 + 8 <= cols; c0 += 8) {
        int i0 = 0;
        for (; i0 + 8 <= n; i0 += 8) {
            f32x8 t[8];
            for (int c = 0; c < 8; c++) t[c] = load8(src + (c0 + c) * stride + i0);
            transpose8(t);
            for (int i = 0; i < 8; i++) store8(dst + static_cast<size_t>(i0 + i) * ld + c0, t[i]);
        }
        for (int c = c0; c < c0 + 8; c++)
            for (int i = i0; i < n; i++) dst[static_cast<size_t>(i) * ld + c] = to_f32(src[c * stride + i]);
    }
    for (int c = c0; c < cols; c++)
        for (int i = 0; i < n; i++) dst[static_cast<size_t>(i) * ld + c] = to_f32(src[c * stride + i]);
}

template <typename X>
inline void store_row(X* dst, const float* src, int n, float scale = 1.0f) {
#pragma omp simd
    for (int i = 0; i < n; i++) dst[i] = from_f32<X>(src[i] * scale);
}

}  // namespace sixnd::cpu
