// Shared by every CUDA file: error checking that throws sixnd::Error, the storage-type traits
// (float or bf16 with FP32 math), 16-byte packed vectors and launch helpers.
#pragma once
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "model/cuda/cuda_check.h"

namespace sixnd::cuda {

using bf16 = __nv_bfloat16;

inline int ceil_div(size_t a, size_t b) { return static_cast<int>((a + b - 1) / b); }

template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_float<bf16>(bf16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16_rn(x); }

template <typename T> struct DataType;
template <> struct DataType<float> { static constexpr cudaDataType_t value = CUDA_R_32F; };
template <> struct DataType<bf16> { static constexpr cudaDataType_t value = CUDA_R_16BF; };

// 16 bytes of T: one LDG.128/STG.128 per thread when the address is 16-byte aligned.
template <typename T> struct alignas(16) Packed128 {
    static constexpr int size = 16 / sizeof(T);
    T v[size];
    __device__ __forceinline__ T& operator[](int i) { return v[i]; }
    __device__ __forceinline__ const T& operator[](int i) const { return v[i]; }
};
template <typename T> __device__ __forceinline__ Packed128<T> load128(const T* p) {
    return *reinterpret_cast<const Packed128<T>*>(p);
}
template <typename T> __device__ __forceinline__ void store128(T* p, const Packed128<T>& x) {
    *reinterpret_cast<Packed128<T>*>(p) = x;
}

// P consecutive elements to/from FP32: 16-byte accesses when P is a multiple of the packet size
// (p then 16-byte aligned), else one element at a time.
template <int P, typename T> __device__ __forceinline__ void load_f32(float (&f)[P], const T* p) {
    constexpr int S = Packed128<T>::size;
    if constexpr (P % S == 0) {
#pragma unroll
        for (int j = 0; j < P; j += S) {
            Packed128<T> v = load128(p + j);
#pragma unroll
            for (int k = 0; k < S; k++) f[j + k] = to_float(v[k]);
        }
    } else {
#pragma unroll
        for (int k = 0; k < P; k++) f[k] = to_float(p[k]);
    }
}
template <int P, typename T> __device__ __forceinline__ void store_f32(T* p, const float (&f)[P]) {
    constexpr int S = Packed128<T>::size;
    if constexpr (P % S == 0) {
#pragma unroll
        for (int j = 0; j < P; j += S) {
            Packed128<T> v;
#pragma unroll
            for (int k = 0; k < S; k++) v[k] = from_float<T>(f[j + k]);
            store128(p + j, v);
        }
    } else {
#pragma unroll
        for (int k = 0; k < P; k++) p[k] = from_float<T>(f[k]);
    }
}
// Round through T: what a value is after it has been stored in T.
template <typename T> __device__ __forceinline__ float round_to(float x) { return to_float(from_float<T>(x)); }

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// A norm's rstd, 1 / sqrt(ss / n + eps), where each lane summed the squares (x[i] - m)^2 of its
// P-wide packets of the n-element vector x: the CPU twin's norm_rstd (model/cpu/vec_math.h).
// Squares of finite values past 1.8e19 overflow the FP32 sum to infinity, which made rstd 0 and
// the normalised vector 0; such a sum (the same on every lane) is redone in double.
template <int P, typename T>
__device__ __forceinline__ float warp_norm_rstd(float lane_ss, const T* x, int n, float m, float eps, int lane) {
    const float ss = warp_sum(lane_ss);
    if (ss != INFINITY) return rsqrtf(ss / n + eps);
    double wide = 0.0;
    for (int c = lane * P; c < n; c += 32 * P) {
        float a[P];
        load_f32<P>(a, x + c);
#pragma unroll
        for (int k = 0; k < P; k++) {
            const double d = static_cast<double>(a[k]) - m;
            wide += d * d;
        }
    }
    for (int o = 16; o > 0; o >>= 1) wide += __shfl_xor_sync(0xffffffffu, wide, o);
    return static_cast<float>(1.0 / sqrt(wide / n + eps));
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

}  // namespace sixnd::cuda
