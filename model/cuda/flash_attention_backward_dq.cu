// flash_attention_backward_dq: dQ for the deterministic backward, with no atomics.
// Grid (query tiles, B*NH; flash_grid.h), heaviest first; query head h reads the K and V of kv
// head h / (NH/NKV) (grouped-query attention). 4 warps x 16 query rows. Q and dO
// stay in shared memory; K and V tiles of BK keys are double-buffered with cp.async. Per key
// tile and warp:
//   S = Q K^T;  P = exp2(S * scale*log2e - lse*log2e)  (causal mask; the forward's lse)
//   dP = dO V^T;  dS = P * (dP - D_row)  (D = rowsum(dO * O) from the pre-pass)
//   dQ += dS K   (FP32 registers; dS packed to bf16 from the C fragments)
// dQ = scale * dQ is written to dqkv[..., 0:C] once, so every element has one fixed
// summation order.
#include "model/cuda/flash_common.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

using namespace flash;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kBQ = 16 * kWarps;

template <int D, int BK> constexpr int dq_smem_bytes() { return (2 * kBQ + 4 * BK) * (D + kPad) * 2; }

template <int D, int BK>
__global__ void __launch_bounds__(kThreads)
    flash_attention_backward_dq_kernel(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse,
                                       const float* Dsum, int B, int T, int C, int NH, int NKV, float scale,
                                       float scale_log2) {
    constexpr int LD = D + kPad;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16* sQ = reinterpret_cast<bf16*>(smem);
    bf16* sdO = sQ + kBQ * LD;
    bf16* sK = sdO + kBQ * LD;    // [2][BK][LD]
    bf16* sV = sK + 2 * BK * LD;  // [2][BK][LD]

    const int qt = gridDim.x - 1 - blockIdx.x;
    const int bh = block_head(B * NH);
    if (bh < 0) return;
    const int b = bh / NH, h = bh % NH, kvh = h / (NH / NKV);
    const QkvRows<D> head(qkv, b, T, C, NKV);
    const size_t stride = head.stride;
    const bf16 *q = head.q(h), *k = head.k(kvh), *v = head.v(kvh);
    const bf16* dO = dout + static_cast<size_t>(b) * T * C + h * D;
    const int q0 = qt * kBQ;
    const int n_kt = key_tiles_seen<BK, kBQ>(q0, T);

    load_tile<kBQ, D, kThreads>(sQ, q, stride, q0, T);
    load_tile<kBQ, D, kThreads>(sdO, dO, C, q0, T);
    load_tile<BK, D, kThreads>(sK, k, stride, 0, T);
    load_tile<BK, D, kThreads>(sV, v, stride, 0, T);
    cp_async_commit();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int wrow0 = q0 + warp * 16;
    const int row[2] = {wrow0 + g, wrow0 + g + 8};
    float lse2[2], drow[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        bool ok = row[r] < T;
        lse2[r] = ok ? lse[static_cast<size_t>(bh) * T + row[r]] * kLog2e : 0.0f;
        drow[r] = ok ? Dsum[static_cast<size_t>(bh) * T + row[r]] : 0.0f;
    }
    float dq[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.0f;

    for (int j = 0; j < n_kt; j++) {
        cp_async_wait_all();
        __syncthreads();
        if (j + 1 < n_kt) {
            load_tile<BK, D, kThreads>(sK + ((j + 1) % 2) * BK * LD, k, stride, (j + 1) * BK, T);
            load_tile<BK, D, kThreads>(sV + ((j + 1) % 2) * BK * LD, v, stride, (j + 1) * BK, T);
        }
        cp_async_commit();
        const int k0 = j * BK;
        if (k0 > wrow0 + 15) continue;
        const bf16* cK = sK + (j % 2) * BK * LD;
        const bf16* cV = sV + (j % 2) * BK * LD;

        float s[BK / 8][4], dp[BK / 8][4];
#pragma unroll
        for (int i = 0; i < BK / 8; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[i][e] = dp[i][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t aq[4], ado[4];
            load_a<LD>(aq, sQ, warp * 16, kk * 16);
            load_a<LD>(ado, sdO, warp * 16, kk * 16);
#pragma unroll
            for (int nn = 0; nn < BK / 16; nn++) {
                uint32_t bk[4], bv[4];
                load_b_nk<LD>(bk, cK, nn * 16, kk * 16);
                load_b_nk<LD>(bv, cV, nn * 16, kk * 16);
                mma(s[2 * nn], aq, bk[0], bk[1]);
                mma(s[2 * nn + 1], aq, bk[2], bk[3]);
                mma(dp[2 * nn], ado, bv[0], bv[1]);
                mma(dp[2 * nn + 1], ado, bv[2], bv[3]);
            }
        }
        const bool mask = k0 + BK - 1 > wrow0 || k0 + BK > T;
#pragma unroll
        for (int i = 0; i < BK / 8; i++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int col = k0 + i * 8 + t4 * 2 + (e & 1);
                float p = exp2f(s[i][e] * scale_log2 - lse2[e / 2]);
                if (mask && (col > row[e / 2] || col >= T)) p = 0.0f;
                s[i][e] = p * (dp[i][e] - drow[e / 2]);  // dS
            }
        }
        mma_strip_kn<BK, D, LD>(dq, s, cK);
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (row[r] >= T) continue;
        bf16* dst = dqkv + (static_cast<size_t>(b) * T + row[r]) * stride + h * D + t4 * 2;
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            *reinterpret_cast<uint32_t*>(dst + i * 8) = pack_bf16(dq[i][2 * r] * scale, dq[i][2 * r + 1] * scale);
    }
}

template <int D, int BK>
void launch_dq(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* Dsum, int B, int T, int C,
               int NH, int NKV, cudaStream_t s) {
    constexpr int smem = dq_smem_bytes<D, BK>();
    allow_smem<flash_attention_backward_dq_kernel<D, BK>>(smem);
    const FlashGrid fg = flash_grid((T + kBQ - 1) / kBQ, static_cast<long long>(B) * NH);
    dim3 grid(fg.x, fg.y, fg.z);
    float scale = 1.0f / sqrtf(static_cast<float>(D));
    flash_attention_backward_dq_kernel<D, BK>
        <<<grid, kThreads, smem, s>>>(dqkv, dout, qkv, lse, Dsum, B, T, C, NH, NKV, scale, scale * kLog2e);
    SIXND_CUDA_LAUNCHED("flash_attention_backward_dq");
}

}  // namespace

void flash_attention_backward_dq(bf16* dqkv, const bf16* dout, const bf16* qkv, const float* lse, const float* D,
                                 int B, int T, int C, int NH, int NKV, cudaStream_t s) {
    if (C / NH == 64) launch_dq<64, 64>(dqkv, dout, qkv, lse, D, B, T, C, NH, NKV, s);
    else launch_dq<128, 32>(dqkv, dout, qkv, lse, D, B, T, C, NH, NKV, s);
}

}  // namespace sixnd::cuda
