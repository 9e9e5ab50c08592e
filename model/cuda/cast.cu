// cast: dst[n] = src[n] between float and bf16 (round to nearest even). Same-type casts are
// copies and never reach here. Elementwise: when both are 16-byte aligned a thread takes 8
// values, one 16-byte bf16 packet and two float packets.
#include "model/cuda/elementwise.cuh"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {
namespace {

template <typename Dst, typename Src, int P> __global__ void cast_kernel(Dst* dst, const Src* src, size_t n) {
    for_packet<P, Src>(n, [&](size_t i, auto width) {
        constexpr int W = decltype(width)::value;
        float f[W];
        load_f32<W>(f, src + i);
        store_f32<W>(dst + i, f);
    });
}

}  // namespace

template <typename Dst, typename Src> void cast(Dst* dst, const Src* src, size_t n, cudaStream_t s) {
    constexpr int P = Packed128<bf16>::size;  // 8: a 16-byte bf16 packet, two float packets
    launch_elementwise<P>("cast", aligned16(dst) && aligned16(src), cast_kernel<Dst, Src, P>, cast_kernel<Dst, Src, 1>,
                          n, s, dst, src, n);
}

template void cast<float, bf16>(float*, const bf16*, size_t, cudaStream_t);
template void cast<bf16, float>(bf16*, const float*, size_t, cudaStream_t);

}  // namespace sixnd::cuda
