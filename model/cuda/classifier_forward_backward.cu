// classifier_forward_backward, over logits[N,Vp] with V real columns and targets[N]:
//   losses[n] = logsumexp(logits[n,0:V]) - logits[n, targets[n]]
//   write_dlogits: logits[n,0:V] = dloss * (softmax - onehot), logits[n,V:Vp] = 0 (in place)
// One block per row. Pass 1 keeps an online (max, sum of exp) per thread over 16-byte packets
// and merges them in a fixed tree (deterministic); pass 2 re-reads the row (L2-resident) and
// writes the gradient. Probabilities are never stored.
#include <cfloat>

#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

constexpr int kBlock = 512;

__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
    float mn = fmaxf(m, m2);
    s = s * __expf(m - mn) + s2 * __expf(m2 - mn);
    m = mn;
}

template <typename T, int P>
__global__ void __launch_bounds__(kBlock) classifier_kernel(T* logits, float* losses, const int32_t* targets, int V,
                                                            int Vp, float dloss, bool write_dlogits) {
    __shared__ float sm[kBlock / 32], ss[kBlock / 32];
    int row = blockIdx.x;
    T* x = logits + static_cast<size_t>(row) * Vp;
    float m = -FLT_MAX, s = 0.0f;
    int vfull = V / P * P;
    for (int c = threadIdx.x * P; c < vfull; c += kBlock * P) {
        float v[P];
        load_f32<P>(v, x + c);
#pragma unroll
        for (int k = 0; k < P; k++) {
            float mn = fmaxf(m, v[k]);
            s = s * __expf(m - mn) + __expf(v[k] - mn);
            m = mn;
        }
    }
    for (int c = vfull + threadIdx.x; c < V; c += kBlock) merge(m, s, to_float(x[c]), 1.0f);
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    m = sm[0];
    s = ss[0];
    for (int w = 1; w < kBlock / 32; w++) merge(m, s, sm[w], ss[w]);
    int target = targets[row];
    if (losses && threadIdx.x == 0) losses[row] = logf(s) + m - to_float(x[target]);
    if (!write_dlogits) return;
    __syncthreads();  // every thread has read x[target] before it is overwritten
    float inv = 1.0f / s;
    int pfull = Vp / P * P;
    for (int c = threadIdx.x * P; c < pfull; c += kBlock * P) {
        float v[P];
        load_f32<P>(v, x + c);
#pragma unroll
        for (int k = 0; k < P; k++) {
            int col = c + k;
            v[k] = col < V ? dloss * (__expf(v[k] - m) * inv - (col == target ? 1.0f : 0.0f)) : 0.0f;
        }
        store_f32<P>(x + c, v);
    }
    for (int col = pfull + threadIdx.x; col < Vp; col += kBlock) {
        float v = to_float(x[col]);
        x[col] = from_float<T>(col < V ? dloss * (__expf(v - m) * inv - (col == target ? 1.0f : 0.0f)) : 0.0f);
    }
}

}  // namespace

template <typename T>
void classifier_forward_backward(T* logits, float* losses, const int32_t* targets, int N, int V, int Vp,
                                 float dloss, bool write_dlogits, cudaStream_t s) {
    constexpr int P = Packed128<T>::size;
    if (Vp % P == 0 && aligned16(logits))
        classifier_kernel<T, P><<<N, kBlock, 0, s>>>(logits, losses, targets, V, Vp, dloss, write_dlogits);
    else
        classifier_kernel<T, 1><<<N, kBlock, 0, s>>>(logits, losses, targets, V, Vp, dloss, write_dlogits);
    SIXND_CUDA_LAUNCHED("classifier_forward_backward");
}

template void classifier_forward_backward<float>(float*, float*, const int32_t*, int, int, int, float, bool,
                                                 cudaStream_t);
template void classifier_forward_backward<bf16>(bf16*, float*, const int32_t*, int, int, int, float, bool,
                                                cudaStream_t);

}  // namespace sixnd::cuda
