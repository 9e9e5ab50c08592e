// Token + position embedding.
// forward:  out[B,T,C] = wte[inp[b,t],:] + wpe[t,:], one row per (b,t), parallel over rows.
// backward: dwte[v,:] += sum of dout over the positions holding token v; dwpe[t,:] += sum_b dout[b,t,:].
// wpe and dwpe may be null (--pos rope: no position embedding).
// Positions are grouped by token with a stable sort, so each dwte row is owned by one thread,
// summed in position order and rounded once: deterministic, no atomics, exact-once rounding in bf16.
#include <algorithm>
#include <numeric>
#include <vector>

#include "model/cpu/kernels.h"

namespace sixnd::cpu {

template <typename X>
void encoder_forward(X* out, const int32_t* inp, const X* wte, const X* wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2) if(worth_threads(size_t(B) * T * C))
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            X* o = out + (static_cast<size_t>(b) * T + t) * C;
            const X* we = wte + static_cast<size_t>(inp[b * T + t]) * C;
            if (!wpe) {
                std::copy(we, we + C, o);
                continue;
            }
            const X* pe = wpe + static_cast<size_t>(t) * C;
#pragma omp simd
            for (int c = 0; c < C; c++) o[c] = from_f32<X>(to_f32(we[c]) + to_f32(pe[c]));
        }
    }
}

template <typename X>
void encoder_backward(X* dwte, X* dwpe, const X* dout, const int32_t* inp, int B, int T, int C) {
    const int N = B * T;
    std::vector<int> pos(N);
    std::iota(pos.begin(), pos.end(), 0);
    std::stable_sort(pos.begin(), pos.end(), [&](int a, int b) { return inp[a] < inp[b]; });
    std::vector<int> group_start;  // runs of pos[] that share a token
    for (int i = 0; i < N; i++)
        if (i == 0 || inp[pos[i]] != inp[pos[i - 1]]) group_start.push_back(i);
    group_start.push_back(N);
    const int groups = static_cast<int>(group_start.size()) - 1;

#pragma omp parallel if(worth_threads(size_t(N) * C))
    {
        std::vector<float> acc(C);
#pragma omp for schedule(dynamic, 4)
        for (int g = 0; g < groups; g++) {
            X* row = dwte + static_cast<size_t>(inp[pos[group_start[g]]]) * C;
            for (int c = 0; c < C; c++) acc[c] = to_f32(row[c]);
            for (int i = group_start[g]; i < group_start[g + 1]; i++) {
                const X* d = dout + static_cast<size_t>(pos[i]) * C;
#pragma omp simd
                for (int c = 0; c < C; c++) acc[c] += to_f32(d[c]);
            }
#pragma omp simd
            for (int c = 0; c < C; c++) row[c] = from_f32<X>(acc[c]);
        }
#pragma omp for
        for (int t = 0; t < (dwpe ? T : 0); t++) {
            X* row = dwpe + static_cast<size_t>(t) * C;
            for (int c = 0; c < C; c++) acc[c] = to_f32(row[c]);
            for (int b = 0; b < B; b++) {
                const X* d = dout + (static_cast<size_t>(b) * T + t) * C;
#pragma omp simd
                for (int c = 0; c < C; c++) acc[c] += to_f32(d[c]);
            }
#pragma omp simd
            for (int c = 0; c < C; c++) row[c] = from_f32<X>(acc[c]);
        }
    }
}

template void encoder_forward<float>(float*, const int32_t*, const float*, const float*, int, int, int);
template void encoder_forward<bf16>(bf16*, const int32_t*, const bf16*, const bf16*, int, int, int);
template void encoder_backward<float>(float*, float*, const float*, const int32_t*, int, int, int);
template void encoder_backward<bf16>(bf16*, bf16*, const bf16*, const int32_t*, int, int, int);

}  // namespace sixnd::cpu
