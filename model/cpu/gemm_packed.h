// The blocked GEMM sixnd runs itself: c[M,N] (= or +=) op(a) @ op(b) (+ bias[N]) in FP32
// arithmetic, with float or bf16 operands and result (GemmShape conventions, matmul.h). It is
// the CPU matmul for BF16 where the CPU has no BF16 dot products — bf16 values are widened as
// the operands are packed, which any GEMM does anyway, and the result is rounded once in the
// kernel's epilogue, so no widened copy of a whole operand is written or read — and the whole
// CPU matmul in builds without oneDNN.
//   B is read as panels of kPanelWidth columns (two of the build's float vectors: 16 with
//     AVX/AVX2, 32 with AVX-512), k-major: [ceil(N/w)][K][w] values of the storage type,
//     zero-padded (bf16 stays bf16: the kernel widens a panel row with two unpacks beside its
//     FMAs, and panels cost half the bytes). Packed per call, or kept packed between calls for a
//     weight (weight_copies.h).
//   A is widened per task into a block in its own stored order (row-major, or k-major when
//     a_trans); the micro-kernel reads 6 of its rows with strides.
//   A 6 x kPanelWidth register-blocked micro-kernel (GCC vector values: AVX-512, AVX/AVX2, SSE
//     or NEON registers, whatever the build targets) adds each output element's K products in
//     order of k, one fused multiply-add each.
//   The epilogue adds bias and the old c and rounds once; with GELU (Linear + GELU) each task
//     then applies it to the rounded rows it has just finished, while they are in its cache.
//   Work: tasks of (a block of M rows) x (a range of panels) over the threads. A K whose panel
//     slices would overflow L1 is cut into equal blocks; the partial sums wait in an FP32 tile
//     of the task. Block sizes follow the core's L1 and L2 (cpu_features()).
// However the work is cut, every output element sums the same products in the same order, so
// the bits depend neither on the thread count nor on the block sizes.
#pragma once
#include <cstddef>
#include <cstring>

#include "core/bf16.h"
#include "core/dtype.h"
#include "model/cpu/matmul.h"
#include "model/cpu/simd.h"

namespace sixnd::cpu {

// Columns of a B panel: two vectors of floats of the instruction set the build targets (the
// micro-kernel's registers), so the layout of packed panels is a property of the build.
constexpr int kPanelWidth = 2 * kWide;

// The lane of a bf16 panel row that holds column j. The kernel widens a panel row with two
// unpacks, each of which interleaves zeros with four bf16 of every 128-bit lane (the low four,
// then the high four): so 128-bit lane L holds columns 4L to 4L + 3 of the first vector, then
// the same columns of the second. With 16 columns: the row's 4-column quads in the order
// 0, 2, 1, 3; with 32: 0, 4, 1, 5, 2, 6, 3, 7.
constexpr int bf16_panel_lane(int j) {
    constexpr int half = kPanelWidth / 2;
    return j < half ? j / 4 * 8 + j % 4 : (j - half) / 4 * 8 + 4 + j % 4;
}

// kPanelWidth consecutive bf16 values (columns j0 to j0 + kPanelWidth - 1 of a row) in that
// lane order: one 64-bit permute of their quads.
typedef long long panel_quads __attribute__((vector_size(kPanelWidth * 2)));
inline panel_quads bf16_panel_row(const bf16* columns) {
    panel_quads v;
    std::memcpy(&v, columns, sizeof v);
#if defined(__AVX512F__)
    return __builtin_shuffle(v, panel_quads{0, 4, 1, 5, 2, 6, 3, 7});
#else
    return __builtin_shuffle(v, panel_quads{0, 2, 1, 3});
#endif
}

// Values (of the storage type) of a K x N operand packed as B panels.
size_t packed_b_size(int K, int N);

// Packs rows [r0, r1) of a matrix stored row-major as B panels into dst (which holds the whole
// packed K x N operand): stored [N][K] when b_trans (a weight W[OC,C] used as W^T: K = C,
// N = OC), else [K][N]. Only the entries those rows contribute are written, so a weight whose
// rows changed is repacked row block by row block.
template <typename X>
void pack_b_rows(X* dst, const X* b, bool b_trans, int K, int N, int r0, int r1);

// c (+)= op(a) op(b) (+ bias), all of dtype. b_packed: b already packed (pack_b_rows over all
// rows, same dtype), or null to pack it here. gelu_out: also gelu_out = gelu(c), c as rounded.
void gemm_packed(DType dtype, void* c, const void* a, const void* b, const void* b_packed, const void* bias,
                 const GemmShape& s, void* gelu_out = nullptr);

}  // namespace sixnd::cpu
