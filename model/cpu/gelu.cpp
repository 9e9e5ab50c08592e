// GELU, tanh approximation, elementwise over n values (parallel, vectorised):
// forward out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); backward dinp = gelu'(x) dout.
#include <algorithm>

#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

// In blocks of kRoundBlock values (see store_rounded).
template <typename X>
void gelu_forward(X* out, const X* inp, size_t n) {
    const size_t blocks = (n + kRoundBlock - 1) / kRoundBlock;
#pragma omp parallel for schedule(static) if(worth_threads(n))
    for (size_t b = 0; b < blocks; b++) {
        const size_t i0 = b * kRoundBlock;
        const X* x = inp + i0;
        store_rounded(out + i0, std::min(kRoundBlock, n - i0), [x](size_t i) { return gelu(to_f32(x[i])); });
    }
}

// dinp may alias dout (the model overwrites the gradient in place): each block is read whole
// before any of it is written.
template <typename X>
void gelu_backward(X* dinp, const X* inp, const X* dout, size_t n) {
    const size_t blocks = (n + kRoundBlock - 1) / kRoundBlock;
#pragma omp parallel for schedule(static) if(worth_threads(n))
    for (size_t b = 0; b < blocks; b++) {
        const size_t i0 = b * kRoundBlock;
        const X *x = inp + i0, *d = dout + i0;
        store_rounded(dinp + i0, std::min(kRoundBlock, n - i0),
                      [x, d](size_t i) { return gelu_grad(to_f32(x[i])) * to_f32(d[i]); });
    }
}

template void gelu_forward<float>(float*, const float*, size_t);
template void gelu_forward<bf16>(bf16*, const bf16*, size_t);
template void gelu_backward<float>(float*, const float*, const float*, size_t);
template void gelu_backward<bf16>(bf16*, const bf16*, const bf16*, size_t);

}  // namespace sixnd::cpu
