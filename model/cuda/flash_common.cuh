// Building blocks of the FlashAttention-style kernels: cp.async tile loads, ldmatrix fragment
// loads and the bf16 mma.sync.m16n8k16 (FP32 accumulate), all sm_80+ PTX, so the same code
// runs on A100 and H100/H200.
//
// Shared-memory tiles are row-major [rows][D + kPad] bf16: the 16-byte pad shifts successive
// rows by four banks, so the eight 16-byte rows an ldmatrix phase reads hit distinct banks.
//
// Fragment layouts (PTX ISA, "mma.m16n8k16"), lane = 4*g + t:
//   A 16x16 (row): a0 = (g, 2t..2t+1)  a1 = (g+8, 2t..)  a2 = (g, 8+2t..)  a3 = (g+8, 8+2t..)
//   B 16x8  (col): b0 = (k 2t..2t+1, n g)  b1 = (k 8+2t.., n g)
//   C 16x8       : c0,c1 = (g, 2t..2t+1)   c2,c3 = (g+8, 2t..2t+1)
// Two adjacent C tiles (16 x 16) are exactly one A fragment once packed to bf16, which is how
// P (and dS) feed the next product without leaving registers.
#pragma once
#include <atomic>

#include "model/cuda/cuda_common.cuh"
#include "model/cuda/flash_grid.h"

namespace sixnd::cuda::flash {

constexpr int kPad = 8;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; zero-filled (nothing read) when !valid.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

// d += a * b  (16x8x16, bf16 in, FP32 accumulate)
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
}

// The A fragment of columns [2j*8, 2j*8+16) of a 16-row strip held as C tiles c[].
template <int N> __device__ __forceinline__ void c_to_a(uint32_t (&a)[4], const float (&c)[N][4], int j) {
    a[0] = pack_bf16(c[2 * j][0], c[2 * j][1]);
    a[1] = pack_bf16(c[2 * j][2], c[2 * j][3]);
    a[2] = pack_bf16(c[2 * j + 1][0], c[2 * j + 1][1]);
    a[3] = pack_bf16(c[2 * j + 1][2], c[2 * j + 1][3]);
}

// A fragment of the 16x16 block at (row0, col0) of a row-major tile.
template <int LD> __device__ __forceinline__ void load_a(uint32_t (&a)[4], const bf16* tile, int row0, int col0) {
    int lane = threadIdx.x % 32;
    ldmatrix_x4(a, tile + (row0 + lane % 16) * LD + col0 + (lane / 16) * 8);
}
// A fragment (rows m, cols k) of a tile stored transposed, [k][m]: block at k0, m0.
template <int LD> __device__ __forceinline__ void load_a_trans(uint32_t (&a)[4], const bf16* tile, int k0, int m0) {
    int lane = threadIdx.x % 32;
    ldmatrix_x4_trans(a, tile + (k0 + (lane / 16) * 8 + lane % 8) * LD + m0 + ((lane / 8) % 2) * 8);
}
// B fragments of two n-tiles (n0..n0+15) at k0..k0+15 from a tile stored [n][k] (e.g. K for
// Q K^T): b[0], b[1] for n-tile 0 and b[2], b[3] for n-tile 1.
template <int LD> __device__ __forceinline__ void load_b_nk(uint32_t (&b)[4], const bf16* tile, int n0, int k0) {
    int lane = threadIdx.x % 32;
    ldmatrix_x4(b, tile + (n0 + (lane / 16) * 8 + lane % 8) * LD + k0 + ((lane / 8) % 2) * 8);
}
// The same from a tile stored [k][n] (e.g. V for P V), transposed by ldmatrix.
template <int LD> __device__ __forceinline__ void load_b_kn(uint32_t (&b)[4], const bf16* tile, int k0, int n0) {
    int lane = threadIdx.x % 32;
    ldmatrix_x4_trans(b, tile + (k0 + ((lane / 8) % 2) * 8 + lane % 8) * LD + n0 + (lane / 16) * 8);
}

// acc += C B for one warp's 16-row strip: C [16 x K] held as K/8 accumulator tiles (rounded to
// bf16 as A fragments), B [K x D] a shared tile stored [k][n]. The second product of every flash
// kernel: P V (forward), dS K (dQ), P dO and dS Q (dK, dV). Each acc element sums over k in order.
template <int K, int D, int LD>
__device__ __forceinline__ void mma_strip_kn(float (&acc)[D / 8][4], const float (&c)[K / 8][4], const bf16* tile) {
#pragma unroll
    for (int kk = 0; kk < K / 16; kk++) {
        uint32_t a[4];
        c_to_a<K / 8>(a, c, kk);
#pragma unroll
        for (int dn = 0; dn < D / 16; dn++) {
            uint32_t b[4];
            load_b_kn<LD>(b, tile, kk * 16, dn * 16);
            mma(acc[2 * dn], a, b[0], b[1]);
            mma(acc[2 * dn + 1], a, b[2], b[3]);
        }
    }
}

// Rows [row0, row0 + ROWS) of a head's [T, D] slice (row stride `stride` elements) into a
// [ROWS][D + kPad] tile; rows at or past T are zero-filled.
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void load_tile(bf16* tile, const bf16* g, size_t stride, int row0, int T) {
    constexpr int CH = D / 8;
    for (int i = threadIdx.x; i < ROWS * CH; i += THREADS) {
        int r = i / CH, c = i % CH;
        bool valid = row0 + r < T;
        const bf16* src = valid ? g + static_cast<size_t>(row0 + r) * stride + c * 8 : g;
        cp_async16(tile + r * (D + kPad) + c * 8, src, valid);
    }
}

// Where batch b's heads start in qkv[B, T, C + 2 NKV D]: query head h's row 0 at q(h), kv head
// kvh's at k(kvh) and v(kvh); successive positions `stride` elements apart.
template <int D> struct QkvRows {
    size_t stride;
    const bf16* rows;
    int C, NKV;
    __device__ QkvRows(const bf16* qkv, int b, int T, int C_, int NKV_)
        : stride(static_cast<size_t>(C_) + 2 * static_cast<size_t>(NKV_) * D),
          rows(qkv + static_cast<size_t>(b) * T * stride), C(C_), NKV(NKV_) {}
    __device__ const bf16* q(int h) const { return rows + h * D; }
    __device__ const bf16* k(int kvh) const { return rows + C + kvh * D; }
    __device__ const bf16* v(int kvh) const { return k(kvh) + NKV * D; }
};

// How many key tiles of BK a query tile of QROWS rows from q0 sees: up to its last row's diagonal.
template <int BK, int QROWS> __device__ __forceinline__ int key_tiles_seen(int q0, int T) {
    return min((T + BK - 1) / BK, (q0 + QROWS + BK - 1) / BK);
}

// This block's batch x head index under flash_grid's launch shape, or -1 for a spare block of
// the last z slice (which must return before its first barrier).
__device__ __forceinline__ int block_head(int heads) {
    long long bh = flash_grid_head(blockIdx.y, blockIdx.z, gridDim.y);
    return bh < heads ? static_cast<int>(bh) : -1;
}

// Raises Kernel's dynamic shared-memory limit to `bytes` (above the 48 KB default) before a
// launch, once per device: a function attribute belongs to the context of the device current
// when it is set, so a process that moves to another device sets it again there. Devices are
// remembered by a bit each up to ordinal 63; past that it is set on every launch. One static
// per kernel (Kernel is a template argument; kernels of one signature share a function type).
template <auto Kernel> void allow_smem(int bytes) {
    static std::atomic<unsigned long long> devices_done{0};
    int device = 0;
    SIXND_CUDA(cudaGetDevice(&device));
    const unsigned long long bit = device < 64 ? 1ull << device : 0;
    if (devices_done.load(std::memory_order_acquire) & bit) return;
    SIXND_CUDA(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    devices_done.fetch_or(bit, std::memory_order_release);
}

}  // namespace sixnd::cuda::flash
