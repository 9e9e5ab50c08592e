// Sum of squares of n values, as double. The input is cut into fixed chunks of kChunk values
// (independent of the thread count); each chunk is summed in double by one thread, and the
// chunk sums are added in chunk order, so the result is the same bits for any thread count.
#include <vector>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {
namespace {
constexpr size_t kChunk = 8192;
}

template <typename X>
double sum_squares(const X* x, size_t n) {
    const size_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(chunks);
#pragma omp parallel for schedule(static) if(worth_threads(n))
    for (size_t k = 0; k < chunks; k++) {
        const size_t end = k * kChunk + kChunk < n ? k * kChunk + kChunk : n;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (size_t i = k * kChunk; i < end; i++) {
            double v = to_f32(x[i]);
            s += v * v;
        }
        partial[k] = s;
    }
    double total = 0.0;
    for (double p : partial) total += p;
    return total;
}

template double sum_squares<float>(const float*, size_t);
template double sum_squares<bf16>(const bf16*, size_t);

}  // namespace sixnd::cpu
