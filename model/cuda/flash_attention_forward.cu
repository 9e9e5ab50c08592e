// flash_attention_forward: causal softmax(q k^T / sqrt(D)) v for bf16 qkv[B,T,C + 2 NKV D]
// ([q NH heads | k NKV heads | v NKV heads]; query head h reads kv head h / (NH/NKV)),
// out[B,T,C], and lse[B,NH,T] = log-sum-exp of each row's scaled scores (natural log), which the
// backward uses to recompute P without a second softmax pass; row_max[B,NH,T] (when non-null)
// = the row's largest scaled score, the online softmax's final running max.
//
// FlashAttention-2 forward: grid (query tiles, B*NH; flash_grid.h), heaviest (last) query tiles
// first; 4 warps, each owning 16 of the block's 64 query rows. Q is loaded once; K and V tiles
// of BK keys are double-buffered with cp.async, tile j+1 loading while tile j is computed. Per
// tile and warp:
// S = Q K^T (mma.sync m16n8k16, FP32), scaled into log2 units and causally masked on the diagonal
// tile; the online softmax keeps a running max m and sum l per row and rescales the FP32 O
// accumulator; P (packed to bf16 straight from the S registers) multiplies V. Key tiles
// entirely above a warp's rows are skipped. Rows and keys past T are zero-filled and masked.
#include <cfloat>

#include "model/cuda/flash_common.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

using namespace flash;

constexpr int kWarps = 4, kThreads = 32 * kWarps, kBQ = 16 * kWarps;

template <int D, int BK> constexpr int fwd_smem_bytes() { return (kBQ + 4 * BK) * (D + kPad) * 2; }

template <int D, int BK>
__global__ void __launch_bounds__(kThreads)
    flash_attention_forward_kernel(bf16* out, float* lse, float* row_max, const bf16* qkv, int B, int T, int C, int NH,
                                   int NKV, float scale_log2) {
    constexpr int LD = D + kPad;
    extern __shared__ __align__(16) unsigned char smem[];
    bf16* sQ = reinterpret_cast<bf16*>(smem);
    bf16* sK = sQ + kBQ * LD;     // [2][BK][LD]
    bf16* sV = sK + 2 * BK * LD;  // [2][BK][LD]

    const int qt = gridDim.x - 1 - blockIdx.x;
    const int bh = block_head(B * NH);
    if (bh < 0) return;
    const int b = bh / NH, h = bh % NH, kvh = h / (NH / NKV);
    const QkvRows<D> head(qkv, b, T, C, NKV);
    const size_t stride = head.stride;
    const bf16 *q = head.q(h), *k = head.k(kvh), *v = head.v(kvh);
    const int q0 = qt * kBQ;
    const int n_kt = key_tiles_seen<BK, kBQ>(q0, T);

    load_tile<kBQ, D, kThreads>(sQ, q, stride, q0, T);
    load_tile<BK, D, kThreads>(sK, k, stride, 0, T);
    load_tile<BK, D, kThreads>(sV, v, stride, 0, T);
    cp_async_commit();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
    const int wrow0 = q0 + warp * 16;  // this warp's first query row
    const int row[2] = {wrow0 + g, wrow0 + g + 8};
    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m[2] = {-FLT_MAX, -FLT_MAX}, l[2] = {0.0f, 0.0f};

    for (int j = 0; j < n_kt; j++) {
        cp_async_wait_all();
        __syncthreads();
        if (j + 1 < n_kt) {
            load_tile<BK, D, kThreads>(sK + ((j + 1) % 2) * BK * LD, k, stride, (j + 1) * BK, T);
            load_tile<BK, D, kThreads>(sV + ((j + 1) % 2) * BK * LD, v, stride, (j + 1) * BK, T);
        }
        cp_async_commit();
        const int k0 = j * BK;
        if (k0 > wrow0 + 15) continue;  // the whole tile is above this warp's diagonal
        const bf16* cK = sK + (j % 2) * BK * LD;
        const bf16* cV = sV + (j % 2) * BK * LD;

        float s[BK / 8][4];
#pragma unroll
        for (int i = 0; i < BK / 8; i++) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t a[4];
            load_a<LD>(a, sQ, warp * 16, kk * 16);
#pragma unroll
            for (int nn = 0; nn < BK / 16; nn++) {
                uint32_t bb[4];
                load_b_nk<LD>(bb, cK, nn * 16, kk * 16);
                mma(s[2 * nn], a, bb[0], bb[1]);
                mma(s[2 * nn + 1], a, bb[2], bb[3]);
            }
        }

        const bool mask = k0 + BK - 1 > wrow0 || k0 + BK > T;
        float mx[2] = {-FLT_MAX, -FLT_MAX};
#pragma unroll
        for (int i = 0; i < BK / 8; i++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float x = s[i][e] * scale_log2;
                if (mask) {
                    int col = k0 + i * 8 + t4 * 2 + (e & 1);
                    if (col > row[e / 2] || col >= T) x = -FLT_MAX;
                }
                s[i][e] = x;
                mx[e / 2] = fmaxf(mx[e / 2], x);
            }
        }
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            float mn = fmaxf(m[r], mx[r]);
            alpha[r] = exp2f(m[r] - mn);
            m[r] = mn;
            l[r] *= alpha[r];
        }
#pragma unroll
        for (int i = 0; i < BK / 8; i++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                // Masked scores sit at -FLT_MAX, far below any real max: exp2 gives exactly 0.
                float p = exp2f(s[i][e] - m[e / 2]);
                s[i][e] = p;
                l[e / 2] += p;
            }
        }
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            o[i][0] *= alpha[0];
            o[i][1] *= alpha[0];
            o[i][2] *= alpha[1];
            o[i][3] *= alpha[1];
        }
        mma_strip_kn<BK, D, LD>(o, s, cV);
    }

#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (row[r] >= T) continue;
        float inv = 1.0f / l[r];
        bf16* dst = out + (static_cast<size_t>(b) * T + row[r]) * C + h * D + t4 * 2;
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            *reinterpret_cast<uint32_t*>(dst + i * 8) = pack_bf16(o[i][2 * r] * inv, o[i][2 * r + 1] * inv);
        if (t4 == 0) {
            lse[static_cast<size_t>(bh) * T + row[r]] = (m[r] + log2f(l[r])) * kLn2;
            if (row_max) row_max[static_cast<size_t>(bh) * T + row[r]] = m[r] * kLn2;
        }
    }
}

template <int D, int BK>
void launch_forward(bf16* out, float* lse, float* row_max, const bf16* qkv, int B, int T, int C, int NH, int NKV,
                    cudaStream_t s) {
    constexpr int smem = fwd_smem_bytes<D, BK>();
    allow_smem<flash_attention_forward_kernel<D, BK>>(smem);
    const FlashGrid fg = flash_grid((T + kBQ - 1) / kBQ, static_cast<long long>(B) * NH);
    dim3 grid(fg.x, fg.y, fg.z);
    float scale_log2 = kLog2e / sqrtf(static_cast<float>(D));
    flash_attention_forward_kernel<D, BK><<<grid, kThreads, smem, s>>>(out, lse, row_max, qkv, B, T, C, NH, NKV,
                                                                          scale_log2);
    SIXND_CUDA_LAUNCHED("flash_attention_forward");
}

}  // namespace

bool flash_attention_supported(const void* qkv, int C, int NH, int NKV) {
    return flash_heads_supported(C, NH, NKV) && aligned16(qkv);
}

void flash_attention_forward(bf16* out, float* lse, float* row_max, const bf16* qkv, int B, int T, int C, int NH,
                             int NKV, cudaStream_t s) {
    SIXND_CHECK(flash_attention_supported(qkv, C, NH, NKV), "flash_attention_forward",
                "needs head size 64 or 128, NH a multiple of NKV and a 16-byte aligned qkv (flash_attention_supported)");
    if (C / NH == 64) launch_forward<64, 64>(out, lse, row_max, qkv, B, T, C, NH, NKV, s);
    else launch_forward<128, 64>(out, lse, row_max, qkv, B, T, C, NH, NKV, s);
}

}  // namespace sixnd::cuda
