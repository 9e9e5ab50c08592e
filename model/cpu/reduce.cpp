// Sum of squares of n values, as double. The input is cut into fixed chunks of kChunk values
// (independent of the thread count); each chunk is summed by one thread, and the chunk sums are
// added in chunk order, so the result is the same bits for any thread count and vector width.
// Within a chunk, value i goes to lane i mod 64 (eight vectors of eight floats, independent
// sums: no addition waits for the one before); every 16 values a lane's float sum is added to its
// double sum (a relative error of at most 16 float roundings, 1e-6, before the sums are double),
// and the 64 double sums are added in lane order at the chunk's end. Widening every value to
// double instead held GPT-2 124M's bf16 gradient norm to a third of the memory's speed (GCC 12
// builds the conversion from 128-bit pieces), a tenth of a BF16 training step on AMX. A chunk
// whose float sums overflow (values beyond ~4e18, whose squares a double holds with ease) is
// summed again with every square in double, so that only a NaN or an infinity in x makes the
// result non-finite: the trainer skips a step whose gradient norm is not finite.
#include <cmath>
#include <vector>

#include "model/cpu/kernels.h"
#include "model/cpu/simd.h"

namespace sixnd::cpu {
namespace {
constexpr size_t kChunk = 8192;
constexpr int kVecs = 8;                      // f32x8 accumulators: 64 lanes
constexpr int kRuns = 16;                     // values per lane summed in float
constexpr size_t kBlock = 8 * kVecs * kRuns;  // 1024 values per float pass

template <typename X>
double chunk_sum_squares(const X* x, size_t n) {
    double lanes[8 * kVecs] = {};
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
        f32x8 acc[kVecs] = {};
        for (int r = 0; r < kRuns; r++)
            for (int j = 0; j < kVecs; j++) {
                const f32x8 v = load8(x + i + 8 * (r * kVecs + j));
                acc[j] += v * v;
            }
        for (int j = 0; j < kVecs; j++)
            for (int l = 0; l < 8; l++) lanes[8 * j + l] += acc[j][l];
    }
    for (size_t k = 0; i < n; i++, k++) {
        const double v = to_f32(x[i]);
        lanes[k % (8 * kVecs)] += v * v;
    }
    double s = 0.0;
    for (double l : lanes) s += l;
    if (std::isfinite(s)) return s;
    s = 0.0;  // the rare overflow path (above)
    for (size_t k = 0; k < n; k++) {
        const double v = to_f32(x[k]);
        s += v * v;
    }
    return s;
}
}  // namespace

template <typename X>
double sum_squares(const X* x, size_t n) {
    const size_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(chunks);
#pragma omp parallel for schedule(static) if(worth_threads(n))
    for (size_t k = 0; k < chunks; k++) {
        const size_t begin = k * kChunk;
        partial[k] = chunk_sum_squares(x + begin, n - begin < kChunk ? n - begin : kChunk);
    }
    double total = 0.0;
    for (double p : partial) total += p;
    return total;
}

template double sum_squares<float>(const float*, size_t);
template double sum_squares<bf16>(const bf16*, size_t);

}  // namespace sixnd::cpu
