// adamw on n elements (one tensor or a ZeRO shard), FP32 moments:
//   g = grad_scale * grad;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p = p * (1 - lr wd) - lr/bc1 * m / (sqrt(v) / sqrt(bc2) + eps)   (decoupled decay)
// with the per-step constants folded by adamw_step (model/ops.h), as the CPU kernel folds them.
// p is the FP32 master when there is one (params = round(p), to nearest, as the CPU backend
// rounds), else the stored parameter. One thread per element. A stored value that is not finite
// (|p| >= overflow, stored_overflow in model/ops.h) sets *nonfinite.
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename T>
__global__ void adamw_kernel(T* params, float* master, const T* grads, float* m, float* v, size_t n,
                             AdamWStep a, unsigned* nonfinite, float overflow) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = to_float(grads[i]) * a.grad_scale;
    float mi = a.beta1 * m[i] + (1.0f - a.beta1) * g;
    float vi = a.beta2 * v[i] + (1.0f - a.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = master ? master[i] : to_float(params[i]);
    p = p * a.decay - a.step_size * mi / (sqrtf(vi) * a.inv_sqrt_bc2 + a.eps);
    if (master) master[i] = p;
    params[i] = from_float<T>(p);
    if (!(fabsf(p) < overflow)) *nonfinite = 1;
}

}  // namespace

template <typename T>
void adamw(T* params, float* master, const T* grads, float* m, float* v, size_t n, const AdamWStep& p,
           unsigned* nonfinite, cudaStream_t s) {
    if (n == 0) return;
    const float overflow = stored_overflow(dtype_of<T>());
    adamw_kernel<T><<<ceil_div(n, 256), 256, 0, s>>>(params, master, grads, m, v, n, p, nonfinite, overflow);
    SIXND_CUDA_LAUNCHED("adamw");
}

template void adamw<float>(float*, float*, const float*, float*, float*, size_t, const AdamWStep&, unsigned*,
                           cudaStream_t);
template void adamw<bf16>(bf16*, float*, const bf16*, float*, float*, size_t, const AdamWStep&, unsigned*,
                          cudaStream_t);

}  // namespace sixnd::cuda
