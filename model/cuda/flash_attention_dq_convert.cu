// flash_attention_dq_convert: dqkv[b,t,h*hs+d] = bf16(dq_accum[b,h,t,d]) (dqkv rows
// C + 2*NKV*hs wide) after the atomic
// dK/dV/dQ kernel. One thread per four elements (16-byte FP32 load, 8-byte bf16 store).
#include "model/cuda/flash_common.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__global__ void flash_attention_dq_convert_kernel(bf16* dqkv, const float* dq_accum, int B, int T, int C, int NH,
                                                  int NKV) {
    const int hs = C / NH;
    size_t i = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
    if (i >= static_cast<size_t>(B) * NH * T * hs) return;
    int d = static_cast<int>(i % hs);
    size_t r = i / hs;
    int t = static_cast<int>(r % T);
    size_t bh = r / T;
    int h = static_cast<int>(bh % NH), b = static_cast<int>(bh / NH);
    float4 x = *reinterpret_cast<const float4*>(dq_accum + i);
    const size_t stride = static_cast<size_t>(C) + 2 * static_cast<size_t>(NKV) * hs;
    bf16* dst = dqkv + (static_cast<size_t>(b) * T + t) * stride + static_cast<size_t>(h) * hs + d;
    uint2 packed = {flash::pack_bf16(x.x, x.y), flash::pack_bf16(x.z, x.w)};
    *reinterpret_cast<uint2*>(dst) = packed;
}

}  // namespace

void flash_attention_dq_convert(bf16* dqkv, const float* dq_accum, int B, int T, int C, int NH, int NKV,
                                cudaStream_t s) {
    size_t n = static_cast<size_t>(B) * T * C;
    flash_attention_dq_convert_kernel<<<ceil_div(n / 4, 256), 256, 0, s>>>(dqkv, dq_accum, B, T, C, NH, NKV);
    SIXND_CUDA_LAUNCHED("flash_attention_dq_convert");
}

}  // namespace sixnd::cuda
