// flash_attention_backward_dkdv: dK and dV (and, when dq_accum is given, dQ by FP32 atomics).
// Grid (key tiles of 64, B*NKV kv heads; flash_grid.h), heaviest (first) key tiles first; 4
// warps x 16 keys. The block's K and V stay in shared memory; for each of the G = NH/NKV query
// heads that read this kv head in turn (grouped-query attention), its query tiles of BQ rows
// from the diagonal down (causal blocks above it are never visited) are double-buffered with
// cp.async, with their lse and D = rowsum(dO * O). dK and dV thus sum over the group in one
// block's registers, in a fixed order (deterministic, no atomics). Per query tile and warp,
// transposed so each warp owns its keys' rows:
//   S^T = K Q^T;  P^T = exp2(S^T * scale*log2e - lse*log2e)  (causal mask)
//   dP^T = V dO^T;  dS^T = P^T * (dP^T - D)
//   dV += P^T dO;  dK += dS^T Q          (FP32 registers; P^T, dS^T packed from C fragments)
// With dq_accum: dS^T goes to shared memory and the block adds scale * dS K for its keys to
// dq_accum[B*NH,T,D] with atomicAdd (fast, but the order of the additions varies).
// dK = scale * dK and dV are written to the kv head's k and v channels of dqkv.
#include "model/cuda/flash_common.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

using namespace flash;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kBK = 16 * kWarps;

template <int D, int BQ> constexpr int dkdv_smem_bytes() {
    return ((2 * kBK + 4 * BQ) * (D + kPad) + kBK * (BQ + kPad)) * 2 + 4 * BQ * 4;
}

template <int D, int BQ>
__global__ void __launch_bounds__(kThreads)
    flash_attention_backward_dkdv_kernel(bf16* dqkv, float* dq_accum, const bf16* dout, const bf16* qkv,
                                         const float* lse, const float* Dsum, int B, int T, int C, int NH, int NKV,
                                         float scale, float scale_log2) {
    constexpr int LD = D + kPad, LDS = BQ + kPad;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16* sK = reinterpret_cast<bf16*>(smem);
    bf16* sV = sK + kBK * LD;
    bf16* sQ = sV + kBK * LD;     // [2][BQ][LD]
    bf16* sdO = sQ + 2 * BQ * LD;  // [2][BQ][LD]
    bf16* sdS = sdO + 2 * BQ * LD;  // [kBK][LDS], dS^T
    float* sL = reinterpret_cast<float*>(sdS + kBK * LDS);  // [2][BQ] lse * log2e
    float* sD = sL + 2 * BQ;                                // [2][BQ]

    const int kt = blockIdx.x;
    const int bkv = block_head(B * NKV);
    if (bkv < 0) return;
    const int b = bkv / NKV, kvh = bkv % NKV, G = NH / NKV;
    const QkvRows<D> head(qkv, b, T, C, NKV);
    const size_t stride = head.stride;
    const bf16 *k = head.k(kvh), *v = head.v(kvh);
    const int k0 = kt * kBK;
    // Step `it` visits query head kvh*G + it / n_i, query tile i_first + it % n_i.
    const int i_first = k0 / BQ, n_i = (T + BQ - 1) / BQ - i_first, n_it = G * n_i;
    auto head_of = [&](int it) { return kvh * G + it / n_i; };

    auto load_q_tile = [&](int it, int buf) {
        const int h = head_of(it), q0 = (i_first + it % n_i) * BQ;
        const size_t bh = static_cast<size_t>(b) * NH + h;
        load_tile<BQ, D, kThreads>(sQ + buf * BQ * LD, head.q(h), stride, q0, T);
        load_tile<BQ, D, kThreads>(sdO + buf * BQ * LD, dout + static_cast<size_t>(b) * T * C + h * D, C, q0, T);
        for (int r = threadIdx.x; r < BQ; r += kThreads) {
            int qi = q0 + r;
            sL[buf * BQ + r] = qi < T ? lse[bh * T + qi] * kLog2e : 0.0f;
            sD[buf * BQ + r] = qi < T ? Dsum[bh * T + qi] : 0.0f;
        }
    };
    load_tile<kBK, D, kThreads>(sK, k, stride, k0, T);
    load_tile<kBK, D, kThreads>(sV, v, stride, k0, T);
    load_q_tile(0, 0);
    cp_async_commit();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int wkey0 = k0 + warp * 16;
    const int key[2] = {wkey0 + g, wkey0 + g + 8};
    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[i][e] = dv[i][e] = 0.0f;

    for (int it = 0; it < n_it; it++) {
        const int buf = it % 2;
        cp_async_wait_all();
        __syncthreads();
        if (it + 1 < n_it) load_q_tile(it + 1, 1 - buf);
        cp_async_commit();
        const int q0 = (i_first + it % n_i) * BQ;
        const bf16* cQ = sQ + buf * BQ * LD;
        const bf16* cdO = sdO + buf * BQ * LD;
        const float* cL = sL + buf * BQ;
        const float* cD = sD + buf * BQ;
        // A warp whose keys all lie past this tile's last query has nothing to add (but
        // must still write zeros of dS^T for the dQ product).
        const bool active = wkey0 <= q0 + BQ - 1;

        float s[BQ / 8][4], dp[BQ / 8][4];
#pragma unroll
        for (int n = 0; n < BQ / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[n][e] = dp[n][e] = 0.0f;
        if (active) {
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                uint32_t ak[4], av[4];
                load_a<LD>(ak, sK, warp * 16, kk * 16);
                load_a<LD>(av, sV, warp * 16, kk * 16);
#pragma unroll
                for (int nn = 0; nn < BQ / 16; nn++) {
                    uint32_t bq[4], bdo[4];
                    load_b_nk<LD>(bq, cQ, nn * 16, kk * 16);
                    load_b_nk<LD>(bdo, cdO, nn * 16, kk * 16);
                    mma(s[2 * nn], ak, bq[0], bq[1]);
                    mma(s[2 * nn + 1], ak, bq[2], bq[3]);
                    mma(dp[2 * nn], av, bdo[0], bdo[1]);
                    mma(dp[2 * nn + 1], av, bdo[2], bdo[3]);
                }
            }
            // s becomes P^T, dp becomes dS^T.
#pragma unroll
            for (int n = 0; n < BQ / 8; n++) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int ql = n * 8 + t4 * 2 + (e & 1);
                    int qi = q0 + ql;
                    float p = exp2f(s[n][e] * scale_log2 - cL[ql]);
                    if (qi < key[e / 2] || qi >= T) p = 0.0f;
                    s[n][e] = p;
                    dp[n][e] = p * (dp[n][e] - cD[ql]);
                }
            }
            mma_strip_kn<BQ, D, LD>(dv, s, cdO);
            mma_strip_kn<BQ, D, LD>(dk, dp, cQ);
        }
        if (dq_accum) {
#pragma unroll
            for (int n = 0; n < BQ / 8; n++) {
                int col = n * 8 + t4 * 2;
                *reinterpret_cast<uint32_t*>(sdS + (warp * 16 + g) * LDS + col) = pack_bf16(dp[n][0], dp[n][1]);
                *reinterpret_cast<uint32_t*>(sdS + (warp * 16 + g + 8) * LDS + col) = pack_bf16(dp[n][2], dp[n][3]);
            }
            __syncthreads();
            // dQ[BQ, D] += dS[BQ, kBK] K[kBK, D]: warps split the tile into BQ/16 row strips and
            // (4 / strips) column groups of DC.
            constexpr int strips = BQ / 16, groups = kWarps / strips, DC = D / groups;
            const int strip = warp % strips, grp = warp / strips;
            float acc[DC / 8][4];
#pragma unroll
            for (int n = 0; n < DC / 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < kBK / 16; kk++) {
                uint32_t a[4];
                load_a_trans<LDS>(a, sdS, kk * 16, strip * 16);
#pragma unroll
                for (int dn = 0; dn < DC / 16; dn++) {
                    uint32_t bb[4];
                    load_b_kn<LD>(bb, sK, kk * 16, grp * DC + dn * 16);
                    mma(acc[2 * dn], a, bb[0], bb[1]);
                    mma(acc[2 * dn + 1], a, bb[2], bb[3]);
                }
            }
#pragma unroll
            for (int r = 0; r < 2; r++) {
                int qi = q0 + strip * 16 + g + 8 * r;
                if (qi >= T) continue;
                const size_t bh = static_cast<size_t>(b) * NH + head_of(it);
                float* dst = dq_accum + (bh * T + qi) * D + grp * DC + t4 * 2;
#pragma unroll
                for (int n = 0; n < DC / 8; n++) {
                    atomicAdd(dst + n * 8, acc[n][2 * r] * scale);
                    atomicAdd(dst + n * 8 + 1, acc[n][2 * r + 1] * scale);
                }
            }
        }
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (key[r] >= T) continue;
        bf16* dst = dqkv + (static_cast<size_t>(b) * T + key[r]) * stride + C + kvh * D + t4 * 2;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            *reinterpret_cast<uint32_t*>(dst + n * 8) = pack_bf16(dk[n][2 * r] * scale, dk[n][2 * r + 1] * scale);
            *reinterpret_cast<uint32_t*>(dst + NKV * D + n * 8) = pack_bf16(dv[n][2 * r], dv[n][2 * r + 1]);
        }
    }
}

template <int D, int BQ>
void launch_dkdv(bf16* dqkv, float* dq_accum, const bf16* dout, const bf16* qkv, const float* lse, const float* Dsum,
                 int B, int T, int C, int NH, int NKV, cudaStream_t s) {
    constexpr int smem = dkdv_smem_bytes<D, BQ>();
    allow_smem<flash_attention_backward_dkdv_kernel<D, BQ>>(smem);
    const FlashGrid fg = flash_grid((T + kBK - 1) / kBK, static_cast<long long>(B) * NKV);
    dim3 grid(fg.x, fg.y, fg.z);
    float scale = 1.0f / sqrtf(static_cast<float>(D));
    flash_attention_backward_dkdv_kernel<D, BQ>
        <<<grid, kThreads, smem, s>>>(dqkv, dq_accum, dout, qkv, lse, Dsum, B, T, C, NH, NKV, scale,
                                      scale * kLog2e);
    SIXND_CUDA_LAUNCHED("flash_attention_backward_dkdv");
}

}  // namespace

void flash_attention_backward_dkdv(bf16* dqkv, float* dq_accum, const bf16* dout, const bf16* qkv, const float* lse,
                                   const float* D, int B, int T, int C, int NH, int NKV, cudaStream_t s) {
    if (C / NH == 64) launch_dkdv<64, 64>(dqkv, dq_accum, dout, qkv, lse, D, B, T, C, NH, NKV, s);
    else launch_dkdv<128, 32>(dqkv, dq_accum, dout, qkv, lse, D, B, T, C, NH, NKV, s);
}

}  // namespace sixnd::cuda
