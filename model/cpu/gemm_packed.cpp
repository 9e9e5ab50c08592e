// The packed GEMM (see gemm_packed.h for the contract and the layout).
#include "model/cpu/gemm_packed.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/cpu_features.h"
#include "model/cpu/kernels.h"
#include "model/cpu/simd.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {
namespace {

constexpr int kNr = kPanelWidth;      // columns of a micro-tile (two vectors)
constexpr int kVec = kWide;           // floats in one of the micro-kernel's vectors
// Rows of a micro-tile (and of an A panel): two accumulator vectors per row, with the two B
// vectors and a broadcast beside them in the registers — 6 rows in AVX2's 16, 12 in AVX-512's
// 32. With AVX-512 the B unpacks share the FMAs' two ports, and 12 rows spread them over twice
// the FMAs (6 rows: 118, 12 rows: 130 GFLOP/s on an Emerald Rapids core, panels in L2).
#if defined(__AVX512F__)
constexpr int kMr = 12;
#else
constexpr int kMr = 6;
#endif
static_assert(kMr == 6 || kMr == 12, "the A and C runs below move 6 or 12 values");
// A row-major A is widened into a k-major block too where the micro-kernel has 12 rows (one
// pointer instead of twelve); with 6 it stays row-major and the kernel reads its rows strided.
constexpr bool kKMajorA = kMr != 6;
constexpr int kRowBlocks = (kMr + 7) / 8;  // a micro-tile's rows as blocks of eight
typedef f32xw fvec;

// The micro-kernel's vectors from and to float or bf16 memory, eight values at a time as
// load8/store8 move them (the same widening and rounding), and eight of their lanes as an f32x8.
// Register moves only (no address taken), so that accumulators passed through them stay in
// registers.
#if defined(__AVX512F__)
inline f32x8 slice8(fvec v, int eighth) {
    return eighth == 0 ? __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)
                       : __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
}
template <typename X>
inline fvec loadv(const X* p) {
    return __builtin_shufflevector(load8(p), load8(p + 8), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
#else
inline f32x8 slice8(fvec v, int) { return v; }
template <typename X>
inline fvec loadv(const X* p) {
    return load8(p);
}
#endif
template <typename X>
inline void storev(X* p, fvec v) {
    for (int e = 0; e < kVec / 8; e++) store8(p + 8 * e, slice8(v, e));
}

// A task's A block takes a quarter of the core's L2 (at least 128 KiB, at most 1 MiB; 256 KiB
// where the L2 size is not known): it stays in L2 while the B panels stream past it, with room
// left there for them. A larger block means fewer passes over B but crowds B out of L2. On a
// Zen 4 core (1 MiB L2) 512 KiB and 1 MiB blocks made d6's backward products 5-10% slower in
// training, 128 and 256 KiB were alike; on an Emerald Rapids core (2 MiB) 512 KiB to 1 MiB were
// alike and 256 KiB 3-4% slower over d6's products. At most kMcMax rows.
size_t a_block_floats() {
    static const size_t floats = [] {
        const long l2 = cpu_features().l2_bytes;
        const size_t bytes = l2 > 0 ? std::clamp<size_t>(static_cast<size_t>(l2) / 4, size_t(128) << 10, size_t(1) << 20)
                                    : size_t(256) << 10;
        return bytes / sizeof(float);
    }();
    return floats;
}
constexpr int kMcMax = 240;
constexpr int kMinBlockRowPanels = 2;  // the smallest block at the end of a product: 12 rows
// B's packed bytes up to which blocks shrink towards the end of a product: past a few MiB, B
// comes from memory for every block, not from the cache the cores share.
constexpr size_t kShrinkBlocksMaxBBytes = size_t(8) << 20;
// K in one block as long as a panel's slice of it fits the core's L1 (kc x 16 values: 1536 bf16
// in 48 KiB, 1024 in 32 KiB; 32 KiB where the size is not known), else in as few equal blocks
// (multiples of 8) as fit. Every block past the first reloads its FP32 partial sums and widens A
// again: with K cut at 1024 into blocks of 512, d6's input gradients (K = 1152 and 1536) and
// fc_proj's forward ran 7-10% slower than in one block on an Emerald Rapids core (48 KiB L1,
// AVX2 path); a K of 3072 or 4096 in one block was 5-10% slower again.
template <typename X>
int k_block(int K) {
    static const int max_kc = [] {
        const long l1 = cpu_features().l1d_bytes > 0 ? cpu_features().l1d_bytes : 32 << 10;
        return std::max(256, static_cast<int>(l1 / (kNr * sizeof(X))) / 8 * 8);
    }();
    if (K <= max_kc) return std::max(K, 1);
    const int blocks = (K + max_kc - 1) / max_kc;
    return ((K + blocks - 1) / blocks + 7) / 8 * 8;
}

// Two vectors of B panel row k: its first and second kVec columns. FP32 panels are read as they
// are; bf16 panels hold each row in bf16_panel_lane's order, so that interleaving it with zeros
// (one unpack per vector: bf16 is the upper half of a float) gives the columns in order — an
// AVX2 core does that beside its FMAs, where widening with a shift would take their ports.
inline void panel_row(const float* bp, fvec& b0, fvec& b1) {
    b0 = loadv(bp);
    b1 = loadv(bp + kVec);
}
#if defined(__AVX512F__)
inline void panel_row(const bf16* bp, fvec& b0, fvec& b1) {
    const __m512i v = _mm512_loadu_si512(bp), z = _mm512_setzero_si512();
    b0 = reinterpret_cast<fvec>(_mm512_unpacklo_epi16(z, v));
    b1 = reinterpret_cast<fvec>(_mm512_unpackhi_epi16(z, v));
}
#else
inline void panel_row(const bf16* bp, fvec& b0, fvec& b1) {
    typedef short i16x16 __attribute__((vector_size(32)));
    i16x16 v;
    std::memcpy(&v, bp, sizeof v);
    const i16x16 z = {};
    const i16x16 lo = __builtin_shuffle(z, v, i16x16{0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, 27});
    const i16x16 hi = __builtin_shuffle(z, v, i16x16{4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, 15, 31});
    std::memcpy(&b0, &lo, sizeof b0);
    std::memcpy(&b1, &hi, sizeof b1);
}
#endif

// Where column j of a panel row sits: FP32 panels in order; bf16 panels as bf16_panel_lane.
template <typename P>
constexpr int lane_of(int j) {
    return sizeof(P) == 2 ? bf16_panel_lane(j) : j;
}

// acc (2 kMr vectors: row r at acc[2r], acc[2r + 1]) += a x bp[kc][kNr], where row r of the
// kMr x kc block a is at ap + r * rs, its k-th value at + k * ks: (rs, ks) = (1, ld) for a block
// held k-major, (ld, 1) for one held row-major (the template fixes which stride is 1). The
// accumulators are locals, apart from acc, so that they stay in registers.
template <bool kKMajor, typename P>
inline void micro_kernel(fvec* acc, const float* ap, size_t ld, const P* bp, int kc) {
    const size_t rs = kKMajor ? 1 : ld, ks = kKMajor ? ld : 1;
    fvec c[2 * kMr];
    for (int v = 0; v < 2 * kMr; v++) c[v] = acc[v];
    for (int k = 0; k < kc; k++) {
        fvec b0, b1;
        panel_row(bp, b0, b1);
        const float* ak = ap + k * ks;
#pragma GCC unroll 12
        for (int r = 0; r < kMr; r++) {
            const float a = ak[r * rs];
            c[2 * r] += a * b0;
            c[2 * r + 1] += a * b1;
        }
        bp += kNr;
    }
    for (int v = 0; v < 2 * kMr; v++) acc[v] = c[v];
}

// Six values at p into the first lanes of a vector (the rest zero), and the first six lanes of
// v rounded into p, each as one 8- or 16-byte access and one 4- or 8-byte one: exactly six, so
// that the neighbouring run of six is never partly overlapped by a store still in flight (a
// 24-byte memcpy of a vector went through the stack).
typedef float f32x4 __attribute__((vector_size(16)));
typedef float f32x2 __attribute__((vector_size(8)));
typedef unsigned long long u64x2 __attribute__((vector_size(16)));
inline f32x8 load6(const float* p) {
    f32x4 lo;
    f32x2 hi;
    std::memcpy(&lo, p, sizeof lo);
    std::memcpy(&hi, p + 4, sizeof hi);
    return f32x8{lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], 0.0f, 0.0f};
}
inline f32x8 load6(const bf16* p) {
    unsigned long long lo;
    unsigned hi;
    std::memcpy(&lo, p, sizeof lo);
    std::memcpy(&hi, p + 4, sizeof hi);
    return widen8(reinterpret_cast<u16x8>(u64x2{lo, hi}));
}
inline void store6(float* p, f32x8 v) {
    const f32x4 lo = {v[0], v[1], v[2], v[3]};
    const f32x2 hi = {v[4], v[5]};
    std::memcpy(p, &lo, sizeof lo);
    std::memcpy(p + 4, &hi, sizeof hi);
}
inline void store6(bf16* p, f32x8 v) {
    const u64x2 h = reinterpret_cast<u64x2>(round8(v));
    const unsigned long long lo = h[0];
    const unsigned hi = static_cast<unsigned>(h[1]);
    std::memcpy(static_cast<void*>(p), &lo, sizeof lo);
    std::memcpy(static_cast<void*>(p + 4), &hi, sizeof hi);
}
// The same for four values, as one 16- or 8-byte access.
inline f32x8 load4(const float* p) {
    f32x4 x;
    std::memcpy(&x, p, sizeof x);
    return f32x8{x[0], x[1], x[2], x[3], 0.0f, 0.0f, 0.0f, 0.0f};
}
inline f32x8 load4(const bf16* p) {
    unsigned long long x;
    std::memcpy(&x, p, sizeof x);
    return widen8(reinterpret_cast<u16x8>(u64x2{x, 0}));
}
inline void store4(float* p, f32x8 v) {
    const f32x4 x = {v[0], v[1], v[2], v[3]};
    std::memcpy(p, &x, sizeof x);
}
inline void store4(bf16* p, f32x8 v) {
    const unsigned long long x = reinterpret_cast<u64x2>(round8(v))[0];
    std::memcpy(static_cast<void*>(p), &x, sizeof x);
}

// A run of kMr consecutive values (an A panel's k-th values, a transposed micro-tile's column)
// as kRowBlocks vectors of eight, and back: six as one partial vector, twelve as eight and four.
template <typename X>
inline void load_run(const X* p, f32x8* v) {
    if constexpr (kMr == 6) {
        v[0] = load6(p);
    } else {
        v[0] = load8(p);
        v[1] = load4(p + 8);
    }
}
template <typename X>
inline void store_run(X* p, const f32x8* v) {
    if constexpr (kMr == 6) {
        store6(p, v[0]);
    } else {
        store8(p, v[0]);
        store4(p + 8, v[1]);
    }
}

// The row stride of the row-major A block: kc rounded up to 8 floats, plus 8, so that the six
// rows the kernel reads at once are not 2 or 4 KiB apart (they would share L1 sets).
inline size_t padded_ld(int kc) { return (static_cast<size_t>(kc) + 7) / 8 * 8 + 8; }

// A task's block of op(a), rows [i0, i0 + mc) and k in [k0, k0 + kc), widened into dst as
// panels of kMr rows, k-major ([mc_pad / kMr][kc][kMr]: each k's kMr values side by side) — or,
// with 6-row micro-tiles, a stored [M][K] row-major as it is ([mc_pad][ld], ld = padded_ld(kc):
// the kernel reads 6 rows at once, each a contiguous run). Rows past mc, up to mc_pad (a
// multiple of kMr), are zero. Returns ld: kMr for the k-major form.
template <typename X>
size_t widen_a_block(float* dst, const X* a, bool a_trans, int M, int K, int i0, int mc, int mc_pad, int k0, int kc) {
    if (a_trans) {
        // Stored [K][M]: each k's kMr values of a panel are side by side in a already.
        constexpr int kSpan = 8 * kRowBlocks;  // values read per k, kMr of them kept
        for (int ip = 0; ip < mc_pad / kMr; ip++) {
            float* d = dst + static_cast<size_t>(ip) * kc * kMr;
            const int r0 = ip * kMr, h = std::min(kMr, mc - r0);
            int k = 0;
            // A whole panel: whole vectors read and widened, kMr values kept. The ones past them
            // are a's (the next columns, or the next stored row's first ones) except past a's
            // last row, which with a short panel's rows is left to the loop value by value.
            if (h == kMr) {
                const int kv = i0 + r0 + kSpan <= M ? kc : std::min(kc, K - 1 - k0);
                for (; k < kv; k++) {
                    const X* src = a + static_cast<size_t>(k0 + k) * M + i0 + r0;
                    f32x8 v[kRowBlocks];
                    for (int b = 0; b < kRowBlocks; b++) v[b] = load8(src + 8 * b);
                    store_run(d + k * kMr, v);
                }
            }
            for (; k < kc; k++) {
                const X* src = a + static_cast<size_t>(k0 + k) * M + i0 + r0;
                for (int r = 0; r < kMr; r++) d[k * kMr + r] = r < h ? to_f32(src[r]) : 0.0f;
            }
        }
        return kMr;
    }
    if constexpr (kKMajorA) {
        // Stored [M][K]: eight k of a panel's rows at a time, transposed in registers as blocks
        // of eight rows.
        for (int ip = 0; ip < mc_pad / kMr; ip++) {
            float* d = dst + static_cast<size_t>(ip) * kc * kMr;
            const int r0 = ip * kMr, h = std::max(0, std::min(kMr, mc - r0));
            int k = 0;
            if (h == kMr)
                for (; k + 8 <= kc; k += 8) {
                    f32x8 t[kRowBlocks][8] = {};
                    for (int r = 0; r < kMr; r++) t[r / 8][r % 8] = load8(a + static_cast<size_t>(i0 + r0 + r) * K + k0 + k);
                    for (int b = 0; b < kRowBlocks; b++) transpose8(t[b]);
                    for (int kk = 0; kk < 8; kk++) {
                        f32x8 v[kRowBlocks];
                        for (int b = 0; b < kRowBlocks; b++) v[b] = t[b][kk];
                        store_run(d + (k + kk) * kMr, v);
                    }
                }
            for (; k < kc; k++)
                for (int r = 0; r < kMr; r++)
                    d[k * kMr + r] = r < h ? to_f32(a[static_cast<size_t>(i0 + r0 + r) * K + k0 + k]) : 0.0f;
        }
        return kMr;
    }
    const size_t ld = padded_ld(kc);
    for (int r = 0; r < mc_pad; r++) {
        float* d = dst + static_cast<size_t>(r) * ld;
        if (r >= mc) {
            std::fill(d, d + kc, 0.0f);
            continue;
        }
        const X* s = a + static_cast<size_t>(i0 + r) * K + k0;
#pragma omp simd
        for (int k = 0; k < kc; k++) d[k] = to_f32(s[k]);
    }
    return ld;
}

// c[h][w] (row stride ldc) = round(t + bias + (accumulate ? c : 0)), t a micro-tile's sums in
// rows of 16; the flags are template parameters so that the loop vectorises.
template <typename X, bool kBias, bool kAccumulate>
void store_rows(X* c, size_t ldc, const float* t, const X* bias, int h, int w) {
    for (int r = 0; r < h; r++) {
        X* cr = c + r * ldc;
        const float* tr = t + r * kNr;
#pragma omp simd
        for (int j = 0; j < w; j++) {
            float x = tr[j];
            if (kBias) x += to_f32(bias[j]);
            if (kAccumulate) x += to_f32(cr[j]);
            cr[j] = from_f32<X>(x);
        }
    }
}

// g[h][w] (row stride ldc) = gelu(c), c as stored: gelu_forward's arithmetic on the rows a task
// has just finished, still in its L2. Per micro-tile instead (rows of 16 values) the loop's
// set-up outweighed its two vectors of work: bf16 fc + GELU took twice the separate pass's time.
template <typename X>
void gelu_rows(X* g, const X* c, size_t ldc, int h, int w) {
    for (int r = 0; r < h; r++) {
        const X* cr = c + r * ldc;
        store_rounded(g + r * ldc, w, [cr](size_t j) { return gelu(to_f32(cr[j])); });
    }
}

// The micro-tile's epilogue: its sums plus bias plus the old c, rounded once into c. A whole
// tile goes straight from the registers (the additions in the same order as store_rows).
template <typename X>
void store_sums(X* c, size_t ldc, const fvec* acc, const X* bias, bool accumulate, int h, int w) {
    if (h == kMr && w == kNr) {
        const fvec b0 = bias ? loadv(bias) : fvec{}, b1 = bias ? loadv(bias + kVec) : fvec{};
        for (int r = 0; r < kMr; r++) {
            X* cr = c + r * ldc;
            fvec x0 = acc[2 * r], x1 = acc[2 * r + 1];
            if (bias) x0 += b0, x1 += b1;
            if (accumulate) x0 += loadv(cr), x1 += loadv(cr + kVec);
            storev(cr, x0);
            storev(cr + kVec, x1);
        }
        return;
    }
    float t[kMr * kNr];
    for (int v = 0; v < 2 * kMr; v++) storev(t + kVec * v, acc[v]);
    if (bias) {
        if (accumulate) store_rows<X, true, true>(c, ldc, t, bias, h, w);
        else store_rows<X, true, false>(c, ldc, t, bias, h, w);
    } else {
        if (accumulate) store_rows<X, false, true>(c, ldc, t, bias, h, w);
        else store_rows<X, false, false>(c, ldc, t, bias, h, w);
    }
}

// The micro-tile's sums (plus the old c) rounded into c transposed: sum (r, j) to c[j][r], row
// stride ldc. A whole tile is transposed in registers (as 8 x 8 blocks of eight rows by eight
// columns, rows past kMr zero), so that column j's kMr sums go out as one run.
template <typename X>
void store_sums_transposed(X* c, size_t ldc, const fvec* acc, bool accumulate, int h, int w) {
    if (h == kMr && w == kNr) {
        f32x8 cols[kNr / 8][kRowBlocks][8] = {};
        for (int g = 0; g < kNr / 8; g++)
            for (int b = 0; b < kRowBlocks; b++) {
                for (int r = 8 * b; r < std::min(kMr, 8 * b + 8); r++)
                    cols[g][b][r - 8 * b] = slice8(acc[2 * r + 8 * g / kVec], 8 * g % kVec / 8);
                transpose8(cols[g][b]);
            }
        for (int j = 0; j < kNr; j++) {
            X* cj = c + j * ldc;
            f32x8 x[kRowBlocks];
            for (int b = 0; b < kRowBlocks; b++) x[b] = cols[j / 8][b][j % 8];
            if (accumulate) {
                f32x8 old[kRowBlocks];
                load_run(cj, old);
                for (int b = 0; b < kRowBlocks; b++) x[b] += old[b];
            }
            store_run(cj, x);
        }
        return;
    }
    float t[kMr * kNr];
    for (int v = 0; v < 2 * kMr; v++) storev(t + kVec * v, acc[v]);
    for (int j = 0; j < w; j++)
        for (int r = 0; r < h; r++) {
            X& cj = c[j * ldc + r];
            cj = from_f32<X>(accumulate ? t[r * kNr + j] + to_f32(cj) : t[r * kNr + j]);
        }
}

// Eight consecutive values of a row as they are (bf16 as its bits: packing moves values, so a
// transpose needs no conversion), and eight columns of a panel row, in column order from d (bf16:
// eight columns from a multiple of 8 are two quads, which bf16_panel_lane puts 8 lanes apart).
inline f32x8 take8(const float* p) { return load8(p); }
inline u16x8 take8(const bf16* p) {
    u16x8 v;
    std::memcpy(&v, static_cast<const void*>(p), sizeof v);
    return v;
}
inline void put8(float* d, f32x8 v) { store8(d, v); }
inline void put8(bf16* d, u16x8 v) {
    const u64x2 h = reinterpret_cast<u64x2>(v);
    const unsigned long long lo = h[0], hi = h[1];
    std::memcpy(static_cast<void*>(d), &lo, sizeof lo);
    std::memcpy(static_cast<void*>(d + 8), &hi, sizeof hi);
}

// Rows [r0, r1) of b, stored row-major with row stride ld, into the panels of a K x N operand
// (of b's own type: packing moves values, it does not round them): stored [N][K] (b_trans: row n
// is column n % 16 of panel n / 16, at every depth k) or [K][N] (row k is depth k of every
// panel). Columns past N are zero.
// [K][N] goes a block of kPackRows rows at a time, panel by panel within it, so that each panel
// gets one contiguous run of kPackRows depths. Row by row, a row's kNr-column pieces land K panel
// rows apart: a multiple of 4 KiB for every K that is a multiple of 128, so all of them fall in one
// L1 set and a handful of L2 sets, and the half-written lines are evicted before the next row
// completes them. GPT-2's fc weight (3072 x 768) took 1.9 ms to pack that way on a Zen 5 core,
// 20 times a memcpy of it; by blocks of rows 0.11-0.18 ms.
constexpr int kPackRows = 16;
template <typename X>
void pack_rows(X* dst, const X* b, size_t ld, bool b_trans, int K, int N, int r0, int r1) {
    const int panels = (N + kNr - 1) / kNr;
    if (!b_trans) {
        for (int kb = r0; kb < r1; kb += kPackRows) {
            const int kb_end = std::min(r1, kb + kPackRows);
            for (int p = 0; p < panels; p++) {
                const int j0 = p * kNr, w = std::min(kNr, N - j0);
                for (int k = kb; k < kb_end; k++) {
                    const X* row = b + static_cast<size_t>(k) * ld;
                    X* d = dst + (static_cast<size_t>(p) * K + k) * kNr;
                    if (w < kNr) {
                        for (int j = 0; j < kNr; j++) d[lane_of<X>(j)] = j < w ? row[j0 + j] : X{};
                    } else if constexpr (std::is_same_v<X, bf16>) {
                        const panel_quads v = bf16_panel_row(row + j0);
                        std::memcpy(static_cast<void*>(d), &v, sizeof v);
                    } else {
                        std::memcpy(d, row + j0, kNr * sizeof(X));
                    }
                }
            }
        }
        return;
    }
    for (int n0 = r0; n0 < r1;) {
        const int p = n0 / kNr, n1 = std::min(r1, (p + 1) * kNr);
        X* d = dst + static_cast<size_t>(p) * K * kNr;
        int k = 0;
        if (n1 - n0 == kNr) {
            // A whole panel: 8 x 8 blocks of its kNr rows transposed into depth-major order.
            for (; k + 8 <= K; k += 8)
                for (int g = 0; g < kNr / 8; g++) {
                    decltype(take8(b)) t[8];
                    for (int j = 0; j < 8; j++) t[j] = take8(b + static_cast<size_t>(n0 + 8 * g + j) * ld + k);
                    transpose8(t);
                    for (int kk = 0; kk < 8; kk++) put8(d + (k + kk) * kNr + lane_of<X>(8 * g), t[kk]);
                }
        }
        for (int n = n0; n < n1; n++) {
            const X* row = b + static_cast<size_t>(n) * ld;
            for (int kk = k; kk < K; kk++) d[kk * kNr + lane_of<X>(n % kNr)] = row[kk];
        }
        if (p == panels - 1)
            for (int kk = 0; kk < K; kk++)
                for (int j = N - p * kNr; j < kNr; j++) d[kk * kNr + lane_of<X>(j)] = X{};
        n0 = n1;
    }
}

// Per-thread buffers, kept between calls (a fresh allocation per call would fault its pages in
// each time): the task's A block and its FP32 partial sums when K is cut; B's panels, per type.
struct Scratch {
    std::vector<float> a, partial;
};
thread_local Scratch scratch;
template <typename X>
std::vector<X>& b_scratch() {
    thread_local std::vector<X> b;
    return b;
}

// c_trans: c is stored transposed ([N][M]); only without bias and GELU.
template <typename X>
void gemm(X* c, const X* a, const X* b, const X* b_packed, const X* bias, const GemmShape& s, X* gelu_out,
          bool c_trans) {
    const int M = s.M, N = s.N, K = s.K;
    if (M <= 0 || N <= 0) return;
    const int panels = (N + kNr - 1) / kNr;
    const int kc_max = k_block<X>(K);
    const bool cut_k = K > kc_max;
    const bool threads = worth_threads(size_t(M) * N * std::max(K, 1));
    const int nthr = threads ? omp_get_max_threads() : 1;
    // M blocks of whole row panels (6 rows), handed to the threads as they come free. Every
    // block streams all of B, so where B is too large to stay in the shared cache between blocks
    // (an LM head's 50k x 768 weight) the blocks are as few as fit: their count a multiple of
    // the thread count, their sizes within one row panel of each other. Otherwise they are large
    // first and shrink towards the end (each a share of the rows left, as OpenMP's guided
    // schedule cuts), so that the threads finish within a small block of each other: with equal
    // blocks one thread waited for the other's last one, 4-5% of the GEMM's thread time in d6
    // training; shrinking GPT-2's LM head blocks took its products at 256 tokens 10-20% longer.
    // With fewer blocks than threads (a handful of rows) the panels are shared out instead.
    const int row_panels_all = (M + kMr - 1) / kMr;
    const int mc_cap = std::max(kMr, std::min<int>(kMcMax, static_cast<int>(a_block_floats() / padded_ld(kc_max)) / kMr * kMr));
    const int cap_rp = mc_cap / kMr, min_rp = std::min(cap_rp, kMinBlockRowPanels);
    std::vector<int> block_rp{0};  // the blocks' first row panels, then the end
    if (packed_b_size(K, N) * sizeof(X) > kShrinkBlocksMaxBBytes) {
        int count = (row_panels_all + cap_rp - 1) / cap_rp;
        count = std::min(row_panels_all, (count + nthr - 1) / nthr * nthr);
        for (int blk = 1; blk <= count; blk++)
            block_rp.push_back(static_cast<int>(static_cast<long>(row_panels_all) * blk / count));
    } else {
        for (int rp = 0; rp < row_panels_all;) {
            const int share = (row_panels_all - rp + 2 * nthr - 1) / (2 * nthr);
            rp = std::min(row_panels_all, rp + std::max(min_rp, std::min(cap_rp, share)));
            block_rp.push_back(rp);
        }
    }
    const int blocks = static_cast<int>(block_rp.size()) - 1;
    int mb = 0;  // the largest block's rows
    for (int blk = 0; blk < blocks; blk++) mb = std::max(mb, (block_rp[blk + 1] - block_rp[blk]) * kMr);
    auto block_row = [&](int blk) { return std::min(M, block_rp[blk] * kMr); };
    const int parts = blocks < nthr ? std::min(nthr, panels) : 1;
    const int tasks = blocks * parts;
    if (!b_packed) b_scratch<X>().resize(packed_b_size(K, N));
    X* b_own = b_scratch<X>().data();
#pragma omp parallel if(threads)
    {
        if (!b_packed) {
#pragma omp for schedule(static)
            for (int p = 0; p < panels; p++) {
                const int j0 = p * kNr, j1 = std::min(N, j0 + kNr);
                // Panel p is made of stored rows [j0, j1) when b is stored [N][K]; otherwise of
                // all K stored rows, columns [j0, j1): pack those rows for this panel only.
                if (s.b_trans) pack_rows(b_own, b, K, true, K, N, j0, j1);
                else pack_rows(b_own + static_cast<size_t>(p) * K * kNr, b + j0, N, false, K, j1 - j0, 0, K);
            }
        }
        const X* bp_all = b_packed ? b_packed : b_own;
        Scratch& my = scratch;
        my.a.resize(static_cast<size_t>(mb) * padded_ld(kc_max));  // mb is a multiple of 6
#pragma omp for schedule(dynamic)
        for (int t = 0; t < tasks; t++) {
            const int i0 = block_row(t / parts), mc = block_row(t / parts + 1) - i0, part = t % parts;
            const int p0 = static_cast<int>(static_cast<long>(panels) * part / parts);
            const int p1 = static_cast<int>(static_cast<long>(panels) * (part + 1) / parts);
            const int row_panels = (mc + kMr - 1) / kMr;
            if (cut_k) my.partial.resize(static_cast<size_t>(row_panels) * (p1 - p0) * kMr * kNr);
            for (int k0 = 0; k0 < std::max(K, 1); k0 += kc_max) {
                const int kc = std::min(kc_max, K - k0);
                const bool first = k0 == 0, last = k0 + kc >= K;
                const size_t lda = widen_a_block(my.a.data(), a, s.a_trans, M, K, i0, mc, row_panels * kMr, k0, kc);
                // The next panel's slice is prefetched a share at a time while this one is used
                // for every row panel: only the first pass over a panel would otherwise wait on
                // memory, and it is the one that brings the panel in.
                const size_t slice_bytes = static_cast<size_t>(kc) * kNr * sizeof(X);
                const size_t lines_per_ip = (slice_bytes / 64 + row_panels - 1) / row_panels;
                for (int p = p0; p < p1; p++) {
                    const X* bp = bp_all + (static_cast<size_t>(p) * K + k0) * kNr;
                    const char* next = p + 1 < p1 ? reinterpret_cast<const char*>(bp + static_cast<size_t>(K) * kNr) : nullptr;
                    const int j0 = p * kNr, w = std::min(kNr, N - j0);
                    for (int ip = 0; ip < row_panels; ip++) {
                        if (next)
                            for (size_t l = ip * lines_per_ip; l < std::min(slice_bytes / 64, (ip + 1) * lines_per_ip); l++)
                                __builtin_prefetch(next + 64 * l);
                        fvec acc[2 * kMr] = {};
                        float* part_sums =
                            cut_k ? my.partial.data() + (static_cast<size_t>(ip) * (p1 - p0) + (p - p0)) * kMr * kNr : nullptr;
                        if (cut_k && !first)
                            for (int v = 0; v < 2 * kMr; v++) acc[v] = loadv(part_sums + kVec * v);
                        if (s.a_trans || kKMajorA)
                            micro_kernel<true>(acc, my.a.data() + static_cast<size_t>(ip) * kc * kMr, kMr, bp, kc);
                        else micro_kernel<false>(acc, my.a.data() + ip * kMr * lda, lda, bp, kc);
                        if (last) {
                            const int r0 = i0 + ip * kMr;
                            if (c_trans)
                                store_sums_transposed(c + static_cast<size_t>(j0) * M + r0, M, acc, s.accumulate,
                                                      std::min(kMr, M - r0), w);
                            else
                                store_sums(c + static_cast<size_t>(r0) * N + j0, N, acc, bias ? bias + j0 : nullptr,
                                           s.accumulate, std::min(kMr, M - r0), w);
                        } else {
                            for (int v = 0; v < 2 * kMr; v++) storev(part_sums + kVec * v, acc[v]);
                        }
                    }
                }
            }
            if (gelu_out) {
                const size_t at = static_cast<size_t>(i0) * N + static_cast<size_t>(p0) * kNr;
                gelu_rows(gelu_out + at, c + at, N, mc, std::min(N, p1 * kNr) - p0 * kNr);
            }
        }
    }
}

}  // namespace

size_t packed_b_size(int K, int N) {
    return static_cast<size_t>((N + kNr - 1) / kNr) * kNr * static_cast<size_t>(std::max(K, 0));
}

template <typename X>
void pack_b_rows(X* dst, const X* b, bool b_trans, int K, int N, int r0, int r1) {
    pack_rows(dst, b, b_trans ? K : N, b_trans, K, N, r0, r1);
}
template void pack_b_rows<float>(float*, const float*, bool, int, int, int, int);
template void pack_b_rows<bf16>(bf16*, const bf16*, bool, int, int, int, int);

void gemm_packed(DType dtype, void* c, const void* a, const void* b, const void* b_packed, const void* bias,
                 const GemmShape& s, void* gelu_out) {
    // A product of two k-major operands, both packed here (the weight gradient: dout^T inp),
    // wider than tall: computed as c^T = op(b)^T op(a)^T, so that the operand packed as B is
    // the narrower one. Packed panels of a wide B overflow L2 and stream again for every block
    // of rows: d6's fc_proj weight gradient (384 x 1536) ran 10-15% slower than the 1536 x 384
    // one of fc. Each sum is the same FMA chain (a b = b a), so the bits are those of c.
    GemmShape t = s;
    const bool c_trans = s.a_trans && !s.b_trans && !b_packed && !bias && !gelu_out && s.N > s.M;
    if (c_trans) {
        std::swap(t.M, t.N);
        std::swap(a, b);
    }
    if (dtype == DType::f32)
        gemm(static_cast<float*>(c), static_cast<const float*>(a), static_cast<const float*>(b),
             static_cast<const float*>(b_packed), static_cast<const float*>(bias), t, static_cast<float*>(gelu_out),
             c_trans);
    else
        gemm(static_cast<bf16*>(c), static_cast<const bf16*>(a), static_cast<const bf16*>(b),
             static_cast<const bf16*>(b_packed), static_cast<const bf16*>(bias), t, static_cast<bf16*>(gelu_out),
             c_trans);
}

}  // namespace sixnd::cpu
