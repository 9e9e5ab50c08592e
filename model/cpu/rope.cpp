// Rotary position embedding on the q and k heads of qkv[B, T, C + 2*NKV*hs], in place.
// The NH query heads and NKV key heads are adjacent at the start of each row; the values are
// not touched. In each head vector, pair i < hs/2 is (x[i], x[i + hs/2]) ("rotate half"); at
// position t (row t of a sequence is at position pos0 + t) it turns by angle t * theta^(-2i/hs):
//   forward  (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)
//   backward the inverse (transposed) rotation of the gradient: (d1 cos + d2 sin, d2 cos - d1 sin).
// Parallel over rows; each row computes its hs/2 angles (in double: t * freq loses float bits
// at large t) once and applies them to all NH + NKV heads.
#include <cmath>
#include <vector>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {

template <typename X>
void rotate(X* qkv, int B, int T, int C, int NH, int NKV, float theta, float sign, int pos0) {
    const int hs = C / NH, half = hs / 2, heads = NH + NKV, W = C + 2 * NKV * hs;
    const int N = B * T;
#pragma omp parallel if(worth_threads(size_t(N) * heads * hs))
    {
        std::vector<float> cs(half), sn(half);
#pragma omp for
        for (int n = 0; n < N; n++) {
            const double t = pos0 + n % T;
            for (int i = 0; i < half; i++) {
                const double a = t * std::pow(static_cast<double>(theta), -2.0 * i / hs);
                cs[i] = static_cast<float>(std::cos(a));
                sn[i] = sign * static_cast<float>(std::sin(a));
            }
            X* row = qkv + static_cast<size_t>(n) * W;
            for (int j = 0; j < heads; j++) {
                X* x = row + static_cast<size_t>(j) * hs;
#pragma omp simd
                for (int i = 0; i < half; i++) {
                    const float x1 = to_f32(x[i]), x2 = to_f32(x[i + half]);
                    x[i] = from_f32<X>(x1 * cs[i] - x2 * sn[i]);
                    x[i + half] = from_f32<X>(x2 * cs[i] + x1 * sn[i]);
                }
            }
        }
    }
}

}  // namespace

template <typename X>
void rope_forward(X* qkv, int B, int T, int C, int NH, int NKV, float theta, int pos0) {
    rotate(qkv, B, T, C, NH, NKV, theta, 1.0f, pos0);
}

template <typename X>
void rope_backward(X* dqkv, int B, int T, int C, int NH, int NKV, float theta) {
    rotate(dqkv, B, T, C, NH, NKV, theta, -1.0f, 0);
}

template void rope_forward<float>(float*, int, int, int, int, int, float, int);
template void rope_forward<bf16>(bf16*, int, int, int, int, int, float, int);
template void rope_backward<float>(float*, int, int, int, int, int, float);
template void rope_backward<bf16>(bf16*, int, int, int, int, int, float);

}  // namespace sixnd::cpu
