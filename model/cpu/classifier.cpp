// Fused softmax + cross-entropy (+ dlogits in place) over logits[N,Vp], real vocabulary 0:V.
// Per row (parallel over N): max, sum of exp(x - max) -> loss = max + log(sum) - x[target];
// then, if asked, the row is overwritten with dloss * (softmax - onehot) on 0:V and 0 on V:Vp,
// recomputing each exp instead of keeping a probabilities buffer (rounded through store_rounded).
#include <cmath>

#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

template <typename X>
void classifier_forward_backward(X* logits, float* losses, const int32_t* targets, int N, int V, int Vp, float dloss,
                                 bool write_dlogits) {
#pragma omp parallel for schedule(static) if(worth_threads(size_t(N) * Vp))
    for (int n = 0; n < N; n++) {
        X* row = logits + static_cast<size_t>(n) * Vp;
        float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int i = 0; i < V; i++) mx = to_f32(row[i]) > mx ? to_f32(row[i]) : mx;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int i = 0; i < V; i++) sum += exp_fast(to_f32(row[i]) - mx);
        const int t = targets[n];
        const float xt = to_f32(row[t]);
        if (losses) losses[n] = mx + std::log(sum) - xt;
        if (!write_dlogits) continue;
        const float inv_sum = 1.0f / sum;
        store_rounded(row, V,
                      [row, mx, dloss, inv_sum](size_t i) { return dloss * exp_fast(to_f32(row[i]) - mx) * inv_sum; });
        row[t] = from_f32<X>(dloss * (exp_fast(xt - mx) * inv_sum - 1.0f));
        for (int i = V; i < Vp; i++) row[i] = from_f32<X>(0.0f);
    }
}

template void classifier_forward_backward<float>(float*, float*, const int32_t*, int, int, int, float, bool);
template void classifier_forward_backward<bf16>(bf16*, float*, const int32_t*, int, int, int, float, bool);

}  // namespace sixnd::cpu
