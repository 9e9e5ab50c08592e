// attention_decode: one decoding step with a KV cache. qkv[B,S,C + 2 NKV hs] holds rows 0..t of
// each sequence ([q NH heads | k NKV heads | v NKV heads]); out[B,C] = softmax(q_t k_j^T /
// sqrt(hs), j <= t) v_j per query head h, with k and v of kv head h / (NH/NKV).
// One block per (b, h): the query goes to shared memory, warps take keys j in turn for the
// scores (FP32, in shared memory), the block reduces max and sum in a fixed order, and each
// thread then owns output channels d, summing p_j v_j[d] over j in order (deterministic).
#include <cfloat>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

constexpr int kThreads = 256;

__device__ float block_reduce(float v, float* sh, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    __syncthreads();  // sh may still be read from a previous reduction
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    float r = sh[0];
    for (int w = 1; w < kThreads / 32; w++) r = is_max ? fmaxf(r, sh[w]) : r + sh[w];
    return r;
}

template <typename T>
__global__ void attention_decode_kernel(T* out, const T* qkv, int S, int t, int C, int NH, int NKV, float scale) {
    extern __shared__ float sm[];  // [hs] query, [t+1] scores
    __shared__ float red[kThreads / 32];
    const int hs = C / NH, b = blockIdx.x / NH, h = blockIdx.x % NH;
    const int kvh = h / (NH / NKV);
    const size_t stride = static_cast<size_t>(C) + 2 * static_cast<size_t>(NKV) * hs;
    const T* row0 = qkv + static_cast<size_t>(b) * S * stride;
    const T* kbase = row0 + C + static_cast<size_t>(kvh) * hs;
    const T* vbase = kbase + static_cast<size_t>(NKV) * hs;
    float* q = sm;
    float* p = sm + hs;
    const T* qrow = row0 + t * stride + static_cast<size_t>(h) * hs;
    for (int d = threadIdx.x; d < hs; d += kThreads) q[d] = to_float(qrow[d]);
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int j = warp; j <= t; j += kThreads / 32) {
        const T* k = kbase + j * stride;
        float acc = 0.0f;
        for (int d = lane; d < hs; d += 32) acc += q[d] * to_float(k[d]);
        acc = warp_sum(acc);
        if (lane == 0) p[j] = acc * scale;
    }
    __syncthreads();
    float m = -FLT_MAX;
    for (int j = threadIdx.x; j <= t; j += kThreads) m = fmaxf(m, p[j]);
    m = block_reduce(m, red, true);
    float sum = 0.0f;
    for (int j = threadIdx.x; j <= t; j += kThreads) {
        float e = __expf(p[j] - m);
        p[j] = e;
        sum += e;
    }
    sum = block_reduce(sum, red, false);
    __syncthreads();
    const float inv = 1.0f / sum;
    for (int d = threadIdx.x; d < hs; d += kThreads) {
        float acc = 0.0f;
        for (int j = 0; j <= t; j++) acc += p[j] * to_float(vbase[j * stride + d]);
        out[static_cast<size_t>(b) * C + static_cast<size_t>(h) * hs + d] = from_float<T>(acc * inv);
    }
}

}  // namespace

template <typename T>
void attention_decode(T* out, const T* qkv, int B, int S, int t, int C, int NH, int NKV, cudaStream_t s) {
    const int hs = C / NH;
    const size_t smem = sizeof(float) * (hs + t + 1);
    // The device's opt-in limit: 227 KiB on sm_90, 163 KiB on sm_80.
    int device = 0, smem_max = 0;
    SIXND_CUDA(cudaGetDevice(&device));
    SIXND_CUDA(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    // The opt-in limit covers the kernel's static shared memory (its reduction slots) too; a
    // property of the compiled kernel, asked once, not on every decoded token.
    static const size_t static_smem = [] {
        cudaFuncAttributes attr{};
        SIXND_CUDA(cudaFuncGetAttributes(&attr, attention_decode_kernel<T>));
        return attr.sharedSizeBytes;
    }();
    smem_max -= static_cast<int>(static_smem);
    SIXND_CHECK(smem <= static_cast<size_t>(smem_max), "attention_decode",
                "cache length " + std::to_string(t + 1) + " too long: its scores need " + std::to_string(smem) +
                    " bytes of shared memory, the device allows " + std::to_string(smem_max));
    if (smem + static_smem > 48 * 1024)  // past the default limit of static + dynamic
        SIXND_CUDA(cudaFuncSetAttribute(attention_decode_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
    const float scale = 1.0f / sqrtf(static_cast<float>(hs));
    attention_decode_kernel<T><<<B * NH, kThreads, smem, s>>>(out, qkv, S, t, C, NH, NKV, scale);
    SIXND_CUDA_LAUNCHED("attention_decode");
}

template void attention_decode<float>(float*, const float*, int, int, int, int, int, int, cudaStream_t);
template void attention_decode<bf16>(bf16*, const bf16*, int, int, int, int, int, int, cudaStream_t);

}  // namespace sixnd::cuda
