// AdamW on n elements, elementwise (parallel, vectorised), with FP32 moments:
//   g = grad_scale * grad;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p -= lr * (m / (1-b1^step) / (sqrt(v / (1-b2^step)) + eps) + wd * p)   (decoupled decay)
// p is the FP32 master weight when there is one (params = round(p)); otherwise the stored
// parameter itself, so in bf16 storage updates below half an ulp are lost (the ablation).
// The update moves 28 bytes per element and is memory-bound; the master/no-master choice is a
// template parameter so that the loop has no branch and vectorises.
#include <cmath>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {

template <typename X, bool kMaster>
void adamw_loop(X* params, float* master, const X* grads, float* m, float* v, size_t n, const AdamWArgs& a) {
    const float bc1 = 1.0f - static_cast<float>(std::pow(static_cast<double>(a.beta1), a.step));
    const float bc2 = 1.0f - static_cast<float>(std::pow(static_cast<double>(a.beta2), a.step));
    const float b1 = a.beta1, b2 = a.beta2, lr = a.lr, eps = a.eps, wd = a.weight_decay, gs = a.grad_scale;
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) {
        const float g = to_f32(grads[i]) * gs;
        const float mi = b1 * m[i] + (1.0f - b1) * g;
        const float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = kMaster ? master[i] : to_f32(params[i]);
        p -= lr * ((mi / bc1) / (std::sqrt(vi / bc2) + eps) + wd * p);
        if (kMaster) master[i] = p;
        params[i] = from_f32<X>(p);
    }
}

}  // namespace

template <typename X>
void adamw(X* params, float* master, const X* grads, float* m, float* v, size_t n, const AdamWArgs& a) {
    if (master) adamw_loop<X, true>(params, master, grads, m, v, n, a);
    else adamw_loop<X, false>(params, nullptr, grads, m, v, n, a);
}

template void adamw<float>(float*, float*, const float*, float*, float*, size_t, const AdamWArgs&);
template void adamw<bf16>(bf16*, float*, const bf16*, float*, float*, size_t, const AdamWArgs&);

}  // namespace sixnd::cpu
