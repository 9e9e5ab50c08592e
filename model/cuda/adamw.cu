// adamw on n elements (one tensor or a ZeRO shard), FP32 moments:
//   g = grad_scale * grad;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p -= lr * (m / bc1 / (sqrt(v / bc2) + eps) + wd * p)        (decoupled decay)
// p is the FP32 master when there is one (params = round(p)), else the stored parameter.
// Rounding to bf16 is to nearest, or stochastic: a hash of (seed, step, index) supplies the 16
// bits below the bf16 mantissa, so runs stay reproducible. One thread per element.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

template <typename T> __device__ __forceinline__ T round_param(float p, bool stochastic, uint32_t bits);
template <> __device__ __forceinline__ float round_param<float>(float p, bool, uint32_t) { return p; }
template <> __device__ __forceinline__ bf16 round_param<bf16>(float p, bool stochastic, uint32_t bits) {
    if (!stochastic || !isfinite(p)) return __float2bfloat16_rn(p);
    uint32_t u = __float_as_uint(p) + (bits & 0xffffu);
    return __ushort_as_bfloat16(static_cast<unsigned short>(u >> 16));
}

template <typename T>
__global__ void adamw_kernel(T* params, float* master, const T* grads, float* m, float* v, size_t n,
                             AdamWParams a) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = to_float(grads[i]) * a.grad_scale;
    float mi = a.beta1 * m[i] + (1.0f - a.beta1) * g;
    float vi = a.beta2 * v[i] + (1.0f - a.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = master ? master[i] : to_float(params[i]);
    p -= a.lr * ((mi / a.bc1) / (sqrtf(vi / a.bc2) + a.eps) + a.weight_decay * p);
    if (master) master[i] = p;
    uint32_t bits = a.stochastic ? hash32(a.seed ^ hash32(static_cast<uint32_t>(i) ^ hash32(static_cast<uint32_t>(i >> 32)))) : 0u;
    params[i] = round_param<T>(p, a.stochastic, bits);
}

}  // namespace

template <typename T>
void adamw(T* params, float* master, const T* grads, float* m, float* v, size_t n, const AdamWParams& p,
           cudaStream_t s) {
    if (n == 0) return;
    adamw_kernel<T><<<ceil_div(n, 256), 256, 0, s>>>(params, master, grads, m, v, n, p);
    SIXND_CUDA_LAUNCHED("adamw");
}

template void adamw<float>(float*, float*, const float*, float*, float*, size_t, const AdamWParams&, cudaStream_t);
template void adamw<bf16>(bf16*, float*, const bf16*, float*, float*, size_t, const AdamWParams&, cudaStream_t);

}  // namespace sixnd::cuda
