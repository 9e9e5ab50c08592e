// The Muon optimizer's kernels (model/ops.h muon_momentum, newton_schulz, muon_apply), FP32.
// Newton-Schulz runs on the wide orientation X[s, l] of x[rows, cols] (s = min side; x^T when
// rows > cols, read through cuBLASLt's transpose flags): A = X X^T; B = c A A + b A (the GEMM's
// beta on a copy of A); X = a X + B X (beta on a copy of X), all CUBLAS_COMPUTE_32F. The
// Frobenius norm is the deterministic sum_squares. Elementwise kernels: one thread per element.
#include <cmath>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

constexpr float kNsA = 3.4445f, kNsB = -4.7750f, kNsC = 2.0315f;
constexpr double kNsEps = 1e-7;

template <typename T>
__global__ void muon_momentum_kernel(float* out, float* m, const T* grads, size_t n, float beta, float grad_scale) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = to_float(grads[i]) * grad_scale;
    float mi = beta * m[i] + (1.0f - beta) * g;
    m[i] = mi;
    out[i] = (1.0f - beta) * g + beta * mi;
}

__global__ void scale_kernel(float* x, size_t n, float s) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

template <typename T>
__global__ void muon_apply_kernel(T* params, float* master, const float* update, size_t n, float step, float keep,
                                  unsigned* nonfinite, float overflow) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = master ? master[i] : to_float(params[i]);
    p = p * keep - step * update[i];
    if (master) master[i] = p;
    params[i] = from_float<T>(p);
    if (!(fabsf(p) < overflow)) *nonfinite = 1;
}

}  // namespace

template <typename T>
void muon_momentum(float* out, float* m, const T* grads, size_t n, float beta, float grad_scale, cudaStream_t s) {
    if (n == 0) return;
    muon_momentum_kernel<T><<<ceil_div(n, 256), 256, 0, s>>>(out, m, grads, n, beta, grad_scale);
    SIXND_CUDA_LAUNCHED("muon_momentum");
}

void newton_schulz(Matmul& mm, float* x, float* work, int rows, int cols, int steps, Scratch& scratch, cudaStream_t s) {
    const bool tall = rows > cols;
    const int sd = tall ? cols : rows, l = tall ? rows : cols;
    const size_t n = static_cast<size_t>(rows) * cols, ss = static_cast<size_t>(sd) * sd;
    float* A = work;
    float* B = A + ss;
    float* Y = B + ss;
    const double norm = std::sqrt(sum_squares<float>(x, n, scratch, s));
    scale_kernel<<<ceil_div(n, 256), 256, 0, s>>>(x, n, static_cast<float>(1.0 / (norm + kNsEps)));
    SIXND_CUDA_LAUNCHED("newton_schulz scale");
    for (int k = 0; k < steps; k++) {
        // A[s,s] = X X^T: x x^T when wide, x^T x when tall.
        mm.gemm(dense_gemm(sd, sd, l, tall, !tall, x, x, A, CUDA_R_32F, CUDA_R_32F));
        SIXND_CUDA(cudaMemcpyAsync(B, A, ss * 4, cudaMemcpyDeviceToDevice, s));
        GemmArgs g = dense_gemm(sd, sd, sd, false, false, A, A, B, CUDA_R_32F, CUDA_R_32F);
        g.alpha = kNsC;
        g.beta = kNsB;
        mm.gemm(g);
        SIXND_CUDA(cudaMemcpyAsync(Y, x, n * 4, cudaMemcpyDeviceToDevice, s));
        // x = a x + (B X) in x's orientation: B x when wide, x B^T when tall.
        g = tall ? dense_gemm(l, sd, sd, false, true, x, B, Y, CUDA_R_32F, CUDA_R_32F)
                 : dense_gemm(sd, l, sd, false, false, B, x, Y, CUDA_R_32F, CUDA_R_32F);
        g.beta = kNsA;
        mm.gemm(g);
        SIXND_CUDA(cudaMemcpyAsync(x, Y, n * 4, cudaMemcpyDeviceToDevice, s));
    }
}

template <typename T>
void muon_apply(T* params, float* master, const float* update, size_t n, float lr, float scale, float weight_decay,
                unsigned* nonfinite, cudaStream_t s) {
    if (n == 0) return;
    const float overflow = stored_overflow(dtype_of<T>());
    muon_apply_kernel<T><<<ceil_div(n, 256), 256, 0, s>>>(params, master, update, n, lr * scale, 1.0f - lr * weight_decay,
                                                          nonfinite, overflow);
    SIXND_CUDA_LAUNCHED("muon_apply");
}

template void muon_momentum<float>(float*, float*, const float*, size_t, float, float, cudaStream_t);
template void muon_momentum<bf16>(float*, float*, const bf16*, size_t, float, float, cudaStream_t);
template void muon_apply<float>(float*, float*, const float*, size_t, float, float, float, unsigned*, cudaStream_t);
template void muon_apply<bf16>(bf16*, float*, const float*, size_t, float, float, float, unsigned*, cudaStream_t);

}  // namespace sixnd::cuda
