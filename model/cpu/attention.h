// Helpers shared by the causal attention kernels: where a head's q, k, v live in the packed
// qkv[B,T,C + 2*NKV*hs] buffer (grouped-query: query head h reads kv head h / (NH/NKV)), and the small loops over a head's channels. Keys (and values, where
// they are dotted with a row) are held transposed, [hs][ld], so that the scores of one query
// against many keys are a vectorised loop across keys rather than one horizontal sum per key.
#pragma once
#include <cstddef>

#include "core/bf16.h"

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

// Column col of a transposed [n][ld] tile from n values.
template <typename X>
inline void load_column(float* dst, int ld, int col, const X* src, int n) {
    for (int i = 0; i < n; i++) dst[static_cast<size_t>(i) * ld + col] = to_f32(src[i]);
}

template <typename X>
inline void store_row(X* dst, const float* src, int n, float scale = 1.0f) {
#pragma omp simd
    for (int i = 0; i < n; i++) dst[i] = from_f32<X>(src[i] * scale);
}

}  // namespace sixnd::cpu
