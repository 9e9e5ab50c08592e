// AdamW on n elements, elementwise (parallel, vectorised), with FP32 moments:
//   g = grad_scale * grad;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p = p * (1 - lr wd) - lr/bc1 * m / (sqrt(v) / sqrt(bc2) + eps)   (decoupled decay)
// with the per-step constants folded by adamw_step (model/ops.h), which the CUDA kernel shares.
// p is the FP32 master weight when there is one (params = round(p)); otherwise the stored
// parameter itself, so in bf16 storage updates below half an ulp are lost (the ablation).
// The update moves 28 bytes per element and is memory-bound; the master/no-master choice is a
// template parameter so that the loop has no branch and vectorises.
#include <cmath>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {

template <typename X, bool kMaster>
void adamw_loop(X* params, float* master, const X* grads, float* m, float* v, size_t n, const AdamWStep& s) {
    const float b1 = s.beta1, b2 = s.beta2, eps = s.eps, gs = s.grad_scale;
    const float step_size = s.step_size, inv_sqrt_bc2 = s.inv_sqrt_bc2, decay = s.decay;
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) {
        const float g = to_f32(grads[i]) * gs;
        const float mi = b1 * m[i] + (1.0f - b1) * g;
        const float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = kMaster ? master[i] : to_f32(params[i]);
        p = p * decay - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
        if (kMaster) master[i] = p;
        params[i] = from_f32<X>(p);
    }
}

}  // namespace

template <typename X>
void adamw(X* params, float* master, const X* grads, float* m, float* v, size_t n, const AdamWArgs& a) {
    const AdamWStep s = adamw_step(a);
    if (master) adamw_loop<X, true>(params, master, grads, m, v, n, s);
    else adamw_loop<X, false>(params, nullptr, grads, m, v, n, s);
}

template void adamw<float>(float*, float*, const float*, float*, float*, size_t, const AdamWArgs&);
template void adamw<bf16>(bf16*, float*, const bf16*, float*, float*, size_t, const AdamWArgs&);

}  // namespace sixnd::cpu
