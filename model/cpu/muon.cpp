// The Muon optimizer's kernels (model/ops.h muon_momentum, newton_schulz, muon_apply), FP32.
// Newton-Schulz on x[rows, cols]: with s = min(rows, cols), the iteration runs on the wide
// orientation X[s, l] (x itself, or x^T when rows > cols, read through the GEMM's transpose
// flags, never copied): A[s,s] = X X^T; B = b A + c A A; X = a X + B X. Three FP32 GEMMs per
// step (2 s^2 l + 2 s^3 + 2 s^2 l FLOPs) through the FP32 Matmul; elementwise passes are
// fixed-order loops, so the result depends only on the inputs and the GEMM engine.
#include <cmath>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {

namespace {
constexpr float kNsA = 3.4445f, kNsB = -4.7750f, kNsC = 2.0315f;
constexpr double kNsEps = 1e-7;

// y[n] = alpha x[n] + beta y[n]
void axpby(float* y, const float* x, size_t n, float alpha, float beta) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta * y[i];
}
}  // namespace

template <typename X>
void muon_momentum(float* out, float* m, const X* grads, size_t n, float beta, float grad_scale) {
#pragma omp parallel for simd schedule(static) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) {
        const float g = to_f32(grads[i]) * grad_scale;
        const float mi = beta * m[i] + (1.0f - beta) * g;
        m[i] = mi;
        out[i] = (1.0f - beta) * g + beta * mi;
    }
}

void newton_schulz(Matmul& mm, float* x, float* work, int rows, int cols, int steps) {
    const bool tall = rows > cols;
    const int s = tall ? cols : rows, l = tall ? rows : cols;
    const size_t n = static_cast<size_t>(rows) * cols, ss = static_cast<size_t>(s) * s;
    float* A = work;
    float* B = A + ss;
    float* Y = B + ss;  // [rows, cols]: the product B X in x's orientation
    const float inv = static_cast<float>(1.0 / (std::sqrt(sum_squares(x, n)) + kNsEps));
    axpby(x, x, n, 0.0f, inv);
    for (int k = 0; k < steps; k++) {
        GemmShape g;
        g.M = s, g.N = s, g.K = l;
        g.a_trans = tall, g.b_trans = !tall;  // A = X X^T: x x^T wide, x^T x tall
        mm.run(A, x, x, nullptr, g);
        g = GemmShape{};
        g.M = s, g.N = s, g.K = s;
        mm.run(B, A, A, nullptr, g);
        axpby(B, A, ss, kNsB, kNsC);  // B = b A + c A A
        g = GemmShape{};
        if (tall) {  // (B X)^T = x B^T
            g.M = l, g.N = s, g.K = s, g.b_trans = true;
            mm.run(Y, x, B, nullptr, g);
        } else {
            g.M = s, g.N = l, g.K = s;
            mm.run(Y, B, x, nullptr, g);
        }
        axpby(x, Y, n, 1.0f, kNsA);  // X = a X + B X
    }
}

template <typename X>
size_t muon_apply(X* params, float* master, const float* update, size_t n, float lr, float scale, float weight_decay) {
    const float keep = 1.0f - lr * weight_decay, step = lr * scale;
    const float lim = stored_overflow(dtype_of<X>());
    size_t bad = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : bad) if(worth_threads(n))
    for (size_t i = 0; i < n; i++) {
        float p = master ? master[i] : to_f32(params[i]);
        p = p * keep - step * update[i];
        if (master) master[i] = p;
        params[i] = from_f32<X>(p);
        bad += !(std::fabs(p) < lim);
    }
    return bad;
}

template void muon_momentum<float>(float*, float*, const float*, size_t, float, float);
template void muon_momentum<bf16>(float*, float*, const bf16*, size_t, float, float);
template size_t muon_apply<float>(float*, float*, const float*, size_t, float, float, float);
template size_t muon_apply<bf16>(bf16*, float*, const float*, size_t, float, float, float);

}  // namespace sixnd::cpu
