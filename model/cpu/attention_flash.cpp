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
// In BF16, on a CPU whose BF16 dot products outrun its FP32 FMAs (flash_on_bf16_dots), the five
// products run on those instead (Pairs): the same blocks and softmax, P and dS rounded to bf16
// where they weight a product (as GPU FlashAttention rounds them), the sums in FP32.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/cpu_features.h"
#include "model/cpu/attention.h"
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

// In bf16 storage: a head size of whole 16-lane vectors, a build with AVX512-BF16, and a CPU whose
// BF16 matmuls run on dot products (cpu_features: AMD's AVX512-BF16, or SIXND_BF16_MATMUL=bf16)
// that are vector ones — where the matmuls have AMX, VDPBF16PS runs below the FP32 FMAs' rate (an
// Emerald Rapids core: 75 against 167 GFLOP/s).
bool flash_on_bf16_dots(int hs) {
    const CpuFeatures& f = cpu_features();
    return kBf16Dots && hs % 16 == 0 && f.avx512_bf16 && !f.amx_bf16 && f.bf16_matmul_native();
}

namespace {
constexpr int kTile = 32;

// The BF16 dot-product arithmetic of a block, as GPU FlashAttention does it: the scores from the
// bf16 q, k, v, dO as stored (exact products, FP32 sums); the probabilities P and dS rounded to
// bf16 to weight the values, keys and queries, with exact zeros where the causal mask hides a
// key, so that every row (or column) of a block runs over the block's whole width. The softmax,
// its sums and every accumulator stay FP32. Declared for every type, defined where the build has
// the instructions; the kernels name it only in branches instantiated there.
template <typename X>
struct Pairs;
#if defined(__AVX512BF16__)
template <>
struct Pairs<bf16> {
    // Rows [0, cols) of a head's keys or values (row c at src + c * stride), transposed as pairs:
    // [hs / 2][kTile], what the scores read.
    static void transposed(uint32_t* dst, const bf16* src, size_t stride, int cols, int hs) {
        load_pair_columns(dst, kTile, src, stride, cols, hs / 2);
    }
    // Rows [0, n) (row t at src + t * stride) zipped two by two: [ceil(n / 2)][hs], what the
    // products that weight rows read.
    static void zipped(uint32_t* dst, const bf16* src, size_t stride, int n, int hs) {
        for (int t = 0; t < n; t += 2)
            zip_rows(dst + static_cast<size_t>(t / 2) * hs, src + t * stride, t + 1 < n ? src + (t + 1) * stride : nullptr,
                     hs);
    }
    static void scores(float* const (&s)[kScoreRows], const bf16* const (&q)[kScoreRows], const uint32_t* pt, int hs,
                       float scale) {
        dot_pairs_rows<kTile>(s, q, pt, hs / 2, kTile, scale);
    }
    // Rows [0, rows) of the kTile-wide block p (FP32, row r at p + r * kTile) rounded into w, each
    // row's entries past valid(r) zero: pairs along keys (P for P v in forward).
    template <typename Valid>
    static void rounded(bf16* w, const float* p, int rows, Valid valid) {
        for (int r = 0; r < rows; r++)
            for (int c0 = 0; c0 < kTile; c0 += 8) {
                const size_t at = static_cast<size_t>(r) * kTile + c0;
                store8(w + at, masked8(p + at, c0, valid(r)));
            }
    }
    // The backward's P and dS blocks (FP32, as `rounded` takes them) rounded: dS as rows (pairs
    // along keys, for dS k), and both zipped two rows at a time ([kTile / 2][kTile] pairs along
    // queries, for P^T dO and dS^T q), rows from `rows` on zero (the zipped columns run over all).
    template <typename Valid>
    static void rounded_backward(bf16* ds_rows, bf16* p_zip, bf16* ds_zip, const float* p, const float* ds, int rows,
                                 Valid valid) {
        for (int r = 0; r < kTile; r += 2) {
            const int v0 = r < rows ? valid(r) : 0, v1 = r + 1 < rows ? valid(r + 1) : 0;
            for (int c0 = 0; c0 < kTile; c0 += 8) {
                const size_t at = static_cast<size_t>(r) * kTile + c0;
                const u16x8 p0 = round8(masked8(p + at, c0, v0)), p1 = round8(masked8(p + at + kTile, c0, v1));
                const u16x8 d0 = round8(masked8(ds + at, c0, v0)), d1 = round8(masked8(ds + at + kTile, c0, v1));
                std::memcpy(static_cast<void*>(ds_rows + at), &d0, sizeof d0);
                std::memcpy(static_cast<void*>(ds_rows + at + kTile), &d1, sizeof d1);
                zip8(p_zip + static_cast<size_t>(r / 2) * 2 * kTile + 2 * c0, p0, p1);
                zip8(ds_zip + static_cast<size_t>(r / 2) * 2 * kTile + 2 * c0, d0, d1);
            }
        }
    }
    // y[o][0, hs) += sum over pairs q < m, in order, of w's pair q for output o dotted with
    // x[q][0, hs), for o < n (y row o at y + o * hs; output o's pairs at w + o * ldo, pair q
    // 2 q ldw values on): kAccumulateRows outputs at a time.
    static void accumulate(float* y, const bf16* w, size_t ldo, size_t ldw, const uint32_t* x, int hs, int n, int m) {
        int o0 = 0;
        for (; o0 + kAccumulateRows <= n; o0 += kAccumulateRows) {
            float* ys[kAccumulateRows];
            const bf16* ws[kAccumulateRows];
            for (int j = 0; j < kAccumulateRows; j++) {
                ys[j] = y + static_cast<size_t>(o0 + j) * hs;
                ws[j] = w + (o0 + j) * ldo;
            }
            accumulate_pairs(ys, ws, ldw, x, hs, m, hs);
        }
        for (; o0 < n; o0++) {
            float* const ys[1] = {y + static_cast<size_t>(o0) * hs};
            const bf16* const ws[1] = {w + o0 * ldo};
            accumulate_pairs(ys, ws, ldw, x, hs, m, hs);
        }
    }

private:
    // Eight values of a row from column c0 on, those at columns >= valid zero.
    static f32x8 masked8(const float* p, int c0, int valid) {
        typedef int i32x8 __attribute__((vector_size(32)));
        const i32x8 keep = (i32x8{0, 1, 2, 3, 4, 5, 6, 7} + c0) < valid;
        return reinterpret_cast<f32x8>(reinterpret_cast<i32x8>(load8(p)) & keep);
    }
};
#endif

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

template <typename X, bool kDots>
void flash_forward(X* out, float* lse, float* row_max, const X* qkv, int B, int T, int C, int NH, int NKV) {
    const HeadView hv(T, C, NH, NKV);
    const int hs = hv.hs, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const int tiles = (T + kTile - 1) / kTile;
    const size_t tile = static_cast<size_t>(kTile) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        // FP32: the query tile (pre-scaled), the key tile transposed and the value tile. Dots: the
        // key tile's pairs transposed, the value rows zipped, and P rounded; the queries are read
        // as stored.
        std::vector<float> q(kDots ? 0 : tile), kt(kDots ? 0 : tile), v(kDots ? 0 : tile), o(tile), s(kTile * kTile),
            m(kTile), l(kTile), alpha(kTile), sum(kTile);
        std::vector<uint32_t> kp(kDots ? tile / 2 : 0), vz(kDots ? tile / 2 : 0);
        std::vector<X> p16(kDots ? kTile * kTile : 0);
#pragma omp for collapse(3) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                for (int qt = 0; qt < tiles; qt++) {
                    const int i0 = qt * kTile;
                    const int rows = std::min(kTile, T - i0);
                    if constexpr (!kDots)
                        for (int r = 0; r < rows; r++)
                            load_row(&q[static_cast<size_t>(r) * hs], qkv + hv.q(b, i0 + r, h), hs, scale);
                    std::fill(o.begin(), o.end(), 0.0f);
                    std::fill(m.begin(), m.end(), -INFINITY);
                    std::fill(l.begin(), l.end(), 0.0f);
                    for (int j0 = 0; j0 < i0 + rows; j0 += kTile) {
                        const int cols = std::min(kTile, T - j0);
                        if constexpr (kDots) {
                            Pairs<X>::transposed(kp.data(), qkv + hv.k(b, j0, h / group), hv.row(0, 1), cols, hs);
                            Pairs<X>::zipped(vz.data(), qkv + hv.v(b, j0, h / group), hv.row(0, 1), cols, hs);
                        } else {
                            load_columns(kt.data(), kTile, qkv + hv.k(b, j0, h / group), hv.row(0, 1), cols, hs);
                            for (int c = 0; c < cols; c++)
                                load_row(&v[static_cast<size_t>(c) * hs], qkv + hv.v(b, j0 + c, h / group), hs);
                        }
                        // All kTile columns: a fixed trip count keeps the scores in registers;
                        // columns past a row's `valid` (stale or masked) are never read.
                        for (int r0 = 0; r0 < rows; r0 += kScoreRows) {
                            float* sr[kScoreRows];
                            const float* qr[kScoreRows];
                            const X* q16[kScoreRows];
                            for (int j = 0; j < kScoreRows; j++) {
                                const int r = std::min(r0 + j, rows - 1);  // past the last row: it again
                                sr[j] = &s[static_cast<size_t>(r) * kTile];
                                qr[j] = kDots ? nullptr : &q[static_cast<size_t>(r) * hs];
                                q16[j] = qkv + hv.q(b, i0 + r, h);
                            }
                            if constexpr (kDots) Pairs<X>::scores(sr, q16, kp.data(), hs, scale);
                            else dot_columns_rows<kTile>(sr, qr, kt.data(), hs, kTile);
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
                        if constexpr (kDots) {
                            Pairs<X>::rounded(p16.data(), s.data(), rows, valid);
                            Pairs<X>::accumulate(o.data(), p16.data(), kTile, 1, vz.data(), hs, rows, (cols + 1) / 2);
                        } else {
                            accumulate_causal_rows(o.data(), s.data(), v.data(), hs, rows, valid);
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

template <typename X, bool kDots>
void flash_backward(X* dqkv, const X* dout, const X* qkv, const X* out, const float* lse, int B, int T, int C, int NH,
                    int NKV) {
    const HeadView hv(T, C, NH, NKV);
    const int hs = hv.hs, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const size_t th = static_cast<size_t>(T) * hs;
    const size_t tile = static_cast<size_t>(kTile) * hs;
    const size_t zipped_t = static_cast<size_t>((T + 1) / 2) * hs;
#pragma omp parallel if(worth_threads(size_t(B) * NH * T * T * hs))
    {
        // FP32: the query head's q (pre-scaled) and dO, the key tile's rows and both tiles
        // transposed. Dots: q and dO zipped (q as stored: dK gets the 1/sqrt(hs) at the end), the
        // key and value tiles' pairs transposed, the key rows zipped, dS rounded as rows and P, dS
        // rounded and zipped (for the products over rows); the scores read q and dO as stored.
        std::vector<float> q(kDots ? 0 : th), dO(kDots ? 0 : th), k(kDots ? 0 : tile), kt(kDots ? 0 : tile),
            vt(kDots ? 0 : tile), dq(th), dk(th), dv(th), D(T), orow(hs), dorow(kDots ? hs : 0), sp(kTile * kTile), sds(kTile * kTile);
        std::vector<uint32_t> qz(kDots ? zipped_t : 0), doz(kDots ? zipped_t : 0), kp(kDots ? tile / 2 : 0),
            vp(kDots ? tile / 2 : 0), kz(kDots ? tile / 2 : 0);
        std::vector<X> ds16(kDots ? kTile * kTile : 0), pz(ds16.size()), dsz(ds16.size());
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < B; b++) {
            for (int kh = 0; kh < NKV; kh++) {
                std::fill(dk.begin(), dk.end(), 0.0f);
                std::fill(dv.begin(), dv.end(), 0.0f);
                for (int h = kh * group; h < (kh + 1) * group; h++) {
                    const float* L = lse + (static_cast<size_t>(b) * NH + h) * T;
                    // q is kept pre-scaled, exactly as in forward, so the scores recompute to the
                    // same bits (dots: both scale the products alike).
                    for (int t = 0; t < T; t++) {
                        float* dOt = kDots ? dorow.data() : &dO[static_cast<size_t>(t) * hs];
                        if constexpr (!kDots) load_row(&q[static_cast<size_t>(t) * hs], qkv + hv.q(b, t, h), hs, scale);
                        load_row(dOt, dout + hv.out(b, t, h), hs);
                        load_row(orow.data(), out + hv.out(b, t, h), hs);
                        D[t] = dot(dOt, orow.data(), hs);
                    }
                    if constexpr (kDots) {
                        Pairs<X>::zipped(qz.data(), qkv + hv.q(b, 0, h), hv.row(0, 1), T, hs);
                        Pairs<X>::zipped(doz.data(), dout + hv.out(b, 0, h), C, T, hs);
                    }
                    std::fill(dq.begin(), dq.end(), 0.0f);
                    for (int j0 = 0; j0 < T; j0 += kTile) {
                        const int cols = std::min(kTile, T - j0);
                        if constexpr (kDots) {
                            Pairs<X>::transposed(kp.data(), qkv + hv.k(b, j0, kh), hv.row(0, 1), cols, hs);
                            Pairs<X>::transposed(vp.data(), qkv + hv.v(b, j0, kh), hv.row(0, 1), cols, hs);
                            Pairs<X>::zipped(kz.data(), qkv + hv.k(b, j0, kh), hv.row(0, 1), cols, hs);
                        } else {
                            for (int c = 0; c < cols; c++)
                                load_row(&k[static_cast<size_t>(c) * hs], qkv + hv.k(b, j0 + c, kh), hs);
                            load_columns(kt.data(), kTile, qkv + hv.k(b, j0, kh), hv.row(0, 1), cols, hs);
                            load_columns(vt.data(), kTile, qkv + hv.v(b, j0, kh), hv.row(0, 1), cols, hs);
                        }
                        float* dkt = &dk[static_cast<size_t>(j0) * hs];
                        float* dvt = &dv[static_cast<size_t>(j0) * hs];
                        // Query tiles strictly above this key tile's diagonal see none of its keys.
                        for (int i0 = j0; i0 < T; i0 += kTile) {
                            const int rows = std::min(kTile, T - i0);
                            // P and dS of the block, row r at sp[r * kTile], sds[r * kTile]. dS
                            // without the 1/sqrt(hs): dK gets it through the pre-scaled q (dots:
                            // at the end), dQ gets it once at the end.
                            // Two products a row (q k^T and dO v^T), each kScoreRows rows at a
                            // time against its own tile (the two tiles' rows in one call leave
                            // fewer rows to share each load: 0.77x the backward's time this way
                            // on a Zen 5 core).
                            for (int r0 = 0; r0 < rows; r0 += kScoreRows) {
                                float *sr[kScoreRows], *dr[kScoreRows];
                                const float *qr[kScoreRows], *dor[kScoreRows];
                                const X *q16[kScoreRows], *do16[kScoreRows];
                                for (int j = 0; j < kScoreRows; j++) {
                                    const int r = std::min(r0 + j, rows - 1);  // past the last row: it again
                                    const size_t at = (static_cast<size_t>(i0) + r) * hs;
                                    sr[j] = &sp[static_cast<size_t>(r) * kTile];
                                    dr[j] = &sds[static_cast<size_t>(r) * kTile];
                                    qr[j] = kDots ? nullptr : &q[at];
                                    dor[j] = kDots ? nullptr : &dO[at];
                                    q16[j] = qkv + hv.q(b, i0 + r, h);
                                    do16[j] = dout + hv.out(b, i0 + r, h);
                                }
                                if constexpr (kDots) {
                                    Pairs<X>::scores(sr, q16, kp.data(), hs, scale);
                                    Pairs<X>::scores(dr, do16, vp.data(), hs, 1.0f);
                                } else {
                                    dot_columns_rows<kTile>(sr, qr, kt.data(), hs, kTile);
                                    dot_columns_rows<kTile>(dr, dor, vt.data(), hs, kTile);
                                }
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
                            if constexpr (kDots) {
                                Pairs<X>::rounded_backward(ds16.data(), pz.data(), dsz.data(), sp.data(), sds.data(), rows,
                                                           valid);
                                const size_t zat = static_cast<size_t>(i0 / 2) * hs;
                                Pairs<X>::accumulate(&dq[at], ds16.data(), kTile, 1, kz.data(), hs, rows, (cols + 1) / 2);
                                Pairs<X>::accumulate(dvt, pz.data(), 2, kTile, &doz[zat], hs, cols, (rows + 1) / 2);
                                Pairs<X>::accumulate(dkt, dsz.data(), 2, kTile, &qz[zat], hs, cols, (rows + 1) / 2);
                            } else {
                                accumulate_causal_rows(&dq[at], sds.data(), k.data(), hs, rows, valid);
                                accumulate_causal_columns(dvt, sp.data(), &dO[at], hs, rows, cols, first);
                                accumulate_causal_columns(dkt, sds.data(), &q[at], hs, rows, cols, first);
                            }
                        }
                    }
                    for (int t = 0; t < T; t++)
                        store_row(dqkv + hv.q(b, t, h), &dq[static_cast<size_t>(t) * hs], hs, scale);
                }
                for (int t = 0; t < T; t++) {
                    store_row(dqkv + hv.k(b, t, kh), &dk[static_cast<size_t>(t) * hs], hs, kDots ? scale : 1.0f);
                    store_row(dqkv + hv.v(b, t, kh), &dv[static_cast<size_t>(t) * hs], hs);
                }
            }
        }
    }
}

}  // namespace

template <typename X>
void attention_flash_forward(X* out, float* lse, float* row_max, const X* qkv, int B, int T, int C, int NH,
                             int NKV) {
    if constexpr (kBf16Dots && std::is_same_v<X, bf16>)
        if (flash_on_bf16_dots(C / NH)) return flash_forward<X, true>(out, lse, row_max, qkv, B, T, C, NH, NKV);
    flash_forward<X, false>(out, lse, row_max, qkv, B, T, C, NH, NKV);
}

template <typename X>
void attention_flash_backward(X* dqkv, const X* dout, const X* qkv, const X* out, const float* lse, int B, int T, int C,
                              int NH, int NKV) {
    if constexpr (kBf16Dots && std::is_same_v<X, bf16>)
        if (flash_on_bf16_dots(C / NH)) return flash_backward<X, true>(dqkv, dout, qkv, out, lse, B, T, C, NH, NKV);
    flash_backward<X, false>(dqkv, dout, qkv, out, lse, B, T, C, NH, NKV);
}

template void attention_flash_forward<float>(float*, float*, float*, const float*, int, int, int, int, int);
template void attention_flash_forward<bf16>(bf16*, float*, float*, const bf16*, int, int, int, int, int);
template void attention_flash_backward<float>(float*, const float*, const float*, const float*, const float*, int, int,
                                              int, int, int);
template void attention_flash_backward<bf16>(bf16*, const bf16*, const bf16*, const bf16*, const float*, int, int, int,
                                             int, int);

}  // namespace sixnd::cpu
