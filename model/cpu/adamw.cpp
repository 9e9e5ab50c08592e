// AdamW on n elements, elementwise (parallel, vectorised), with FP32 moments:
//   g = grad_scale * grad;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p = p * (1 - lr wd) - lr/bc1 * m / (sqrt(v) / sqrt(bc2) + eps)   (decoupled decay)
// with the per-step constants folded by adamw_step (model/ops.h), which the CUDA kernel shares.
// p is the FP32 master weight when there is one (params = round(p)); otherwise the stored
// parameter itself, so in bf16 storage updates below half an ulp are lost (the ablation).
// The update moves 28 bytes per element and is memory-bound; the master/no-master choice is a
// template parameter so that the loop has no branch and vectorises.
// bf16 where the build targets AVX2 without AVX-512 runs in explicit blocks of 16 (two f32x8,
// simd.h) first: vectorised by the compiler, its rounding (an unsigned compare and narrowed
// masks, without AVX-512's mask registers) and spilled constants took the loop to twice FP32's
// instructions and 1.8x its time in L3, 1.1x from memory. The update is one expression,
// update(), for the blocks and the loop, so that both contract it into the same FMAs: the bits
// do not depend on which of them ran, and master weights are FP32's on the same gradients.
// Each new p is also compared with stored_overflow as it is stored (the trainer's finiteness
// check), a compare and a count per value in a loop that waits on memory.
#include <cmath>
#include <type_traits>

#include "model/cpu/kernels.h"
#include "model/cpu/simd.h"

namespace sixnd::cpu {
namespace {

#if defined(__AVX2__) && !defined(__AVX512F__)
constexpr bool kBf16Blocks = true;
#else
constexpr bool kBf16Blocks = false;
#endif

inline float sqrt_lanes(float x) { return std::sqrt(x); }
inline f32x8 sqrt_lanes(f32x8 x) { return sqrt8(x); }

// One step of one element or eight: m and v updated in place, the new p returned. The loops
// take s firstprivate: each thread's own copy, which no store through the pointers can alias, so
// the constants stay in registers (shared, they are reloaded for every block).
template <typename V>
inline V update(V g, V& m, V& v, V p, const AdamWStep& s) {
    m = s.beta1 * m + (1.0f - s.beta1) * g;
    v = s.beta2 * v + (1.0f - s.beta2) * g * g;
    return p * s.decay - s.step_size * m / (sqrt_lanes(v) * s.inv_sqrt_bc2 + s.eps);
}

// Elements [0, n / 16 * 16) of bf16 AdamW; returns how many that is, and adds the blocks with a
// stored value that is not finite to *bad.
template <bool kMaster>
size_t adamw_bf16_blocks(bf16* params, float* master, const bf16* grads, float* m, float* v, size_t n, AdamWStep s,
                         size_t* bad) {
    const size_t blocks = n / 16;
    const float lim = stored_overflow(DType::bf16);
    size_t nonfinite = 0;
#pragma omp parallel for schedule(static) firstprivate(s) reduction(+ : nonfinite) if(worth_threads(n))
    for (size_t b = 0; b < blocks; b++) {
        f32x8 p[2];
        for (int h = 0; h < 2; h++) {
            const size_t i = b * 16 + 8 * h;
            f32x8 mi = load8(m + i), vi = load8(v + i);
            const f32x8 p0 = kMaster ? load8(master + i) : load8(params + i);
            p[h] = update(load8(grads + i) * s.grad_scale, mi, vi, p0, s);
            store8(m + i, mi);
            store8(v + i, vi);
            if (kMaster) store8(master + i, p[h]);
        }
        store16(params + b * 16, p[0], p[1]);
        const auto finite = (p[0] < lim) & (p[0] > -lim) & (p[1] < lim) & (p[1] > -lim);
        int all = finite[0];
        for (int l = 1; l < 8; l++) all &= finite[l];
        nonfinite += all == 0;
    }
    *bad += nonfinite;
    return blocks * 16;
}

template <typename X, bool kMaster>
size_t adamw_loop(X* params, float* master, const X* grads, float* m, float* v, size_t n, AdamWStep s) {
    size_t i0 = 0, bad = 0;
    if constexpr (kBf16Blocks && std::is_same_v<X, bf16>)
        i0 = adamw_bf16_blocks<kMaster>(params, master, grads, m, v, n, s, &bad);
    const float lim = stored_overflow(dtype_of<X>());
#pragma omp parallel for simd schedule(static) firstprivate(s) reduction(+ : bad) if(worth_threads(n - i0))
    for (size_t i = i0; i < n; i++) {
        float mi = m[i], vi = v[i];
        const float p = update(to_f32(grads[i]) * s.grad_scale, mi, vi, kMaster ? master[i] : to_f32(params[i]), s);
        m[i] = mi;
        v[i] = vi;
        if (kMaster) master[i] = p;
        params[i] = from_f32<X>(p);
        bad += !(std::fabs(p) < lim);
    }
    return bad;
}

}  // namespace

template <typename X>
size_t adamw(X* params, float* master, const X* grads, float* m, float* v, size_t n, const AdamWArgs& a) {
    const AdamWStep s = adamw_step(a);
    if (master) return adamw_loop<X, true>(params, master, grads, m, v, n, s);
    return adamw_loop<X, false>(params, nullptr, grads, m, v, n, s);
}

template size_t adamw<float>(float*, float*, const float*, float*, float*, size_t, const AdamWArgs&);
template size_t adamw<bf16>(bf16*, float*, const bf16*, float*, float*, size_t, const AdamWArgs&);

}  // namespace sixnd::cpu
