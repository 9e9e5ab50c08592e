// rope_forward:  rotary position embedding, in place, on the q and k heads of
//                qkv[B,T,(NH + 2 NKV) hs] (v untouched). Pairs (i, i + hs/2), i < hs/2 ("rotate
//                half"); at position t pair i turns by a = t * theta^(-2i/hs); row t of each
//                sequence is at position pos0 + t (a decoder's one new row: T = 1).
//                  x1' = x1 cos a - x2 sin a;   x2' = x2 cos a + x1 sin a
// rope_backward: the inverse rotation (by -a) of the q and k parts of dqkv, in place: the
//                gradient of a rotation is its transpose.
// First a [T, hs/2] table of (cos a, sin a), computed in double (the angle reaches pos0 + T radians,
// where float would lose the phase) and stored as float in scratch; then one thread per pair
// (b, t, head, i), FP32 math.
#include <cmath>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__global__ void rope_table_kernel(float2* table, int T, int half, double theta, int pos0) {
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * half) return;
    const int t = pos0 + idx / half, i = idx % half;
    const double a = t * pow(theta, -static_cast<double>(i) / half);
    double s, c;
    sincos(a, &s, &c);
    table[idx] = make_float2(static_cast<float>(c), static_cast<float>(s));
}

template <typename T>
__global__ void rope_rotate_kernel(T* qkv, const float2* table, int B, int T_, int hs, int width, int heads,
                                   float sign) {
    const int half = hs / 2;
    const size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= static_cast<size_t>(B) * T_ * heads * half) return;
    const int i = static_cast<int>(idx % half);
    const size_t r = idx / half;
    const int j = static_cast<int>(r % heads);
    const size_t bt = r / heads;
    const int t = static_cast<int>(bt % T_);
    const float2 cs = table[static_cast<size_t>(t) * half + i];
    const float sn = sign * cs.y;
    T* x = qkv + bt * width + static_cast<size_t>(j) * hs + i;
    const float x1 = to_float(x[0]), x2 = to_float(x[half]);
    x[0] = from_float<T>(x1 * cs.x - x2 * sn);
    x[half] = from_float<T>(x2 * cs.x + x1 * sn);
}

template <typename T>
void rope_rotate(T* qkv, int B, int T_, int C, int NH, int NKV, float theta, float sign, int pos0, Scratch& scratch,
                 cudaStream_t s) {
    const int hs = C / NH, half = hs / 2, heads = NH + NKV;
    float2* table = static_cast<float2*>(scratch.get(sizeof(float2) * static_cast<size_t>(T_) * half));
    rope_table_kernel<<<ceil_div(static_cast<size_t>(T_) * half, 256), 256, 0, s>>>(table, T_, half,
                                                                                   static_cast<double>(theta), pos0);
    SIXND_CUDA_LAUNCHED("rope table");
    const size_t pairs = static_cast<size_t>(B) * T_ * heads * half;
    rope_rotate_kernel<T><<<ceil_div(pairs, 256), 256, 0, s>>>(qkv, table, B, T_, hs, C + 2 * NKV * hs, heads, sign);
    SIXND_CUDA_LAUNCHED("rope rotate");
}

}  // namespace

template <typename T>
void rope_forward(T* qkv, int B, int T_, int C, int NH, int NKV, float theta, int pos0, Scratch& scratch,
                  cudaStream_t s) {
    rope_rotate<T>(qkv, B, T_, C, NH, NKV, theta, 1.0f, pos0, scratch, s);
}

template <typename T>
void rope_backward(T* dqkv, int B, int T_, int C, int NH, int NKV, float theta, Scratch& scratch, cudaStream_t s) {
    rope_rotate<T>(dqkv, B, T_, C, NH, NKV, theta, -1.0f, 0, scratch, s);
}

template void rope_forward<float>(float*, int, int, int, int, int, float, int, Scratch&, cudaStream_t);
template void rope_forward<bf16>(bf16*, int, int, int, int, int, float, int, Scratch&, cudaStream_t);
template void rope_backward<float>(float*, int, int, int, int, int, float, Scratch&, cudaStream_t);
template void rope_backward<bf16>(bf16*, int, int, int, int, int, float, Scratch&, cudaStream_t);

}  // namespace sixnd::cuda
