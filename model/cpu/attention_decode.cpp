// One decoding step of causal attention over a KV cache: qkv[B,S,C + 2*NKV*hs] holds rows 0..t
// of each sequence; out[B,C] attends the query of row t to the keys and values of rows 0..t
// (query head h reads kv head h / (NH/NKV)).
// Parallel over (b, head): scores q.k / sqrt(hs), softmax, weighted sum of v, all in FP32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/cpu/attention.h"
#include "model/cpu/kernels.h"
#include "model/cpu/vec_math.h"

namespace sixnd::cpu {

template <typename X>
void attention_decode(X* out, const X* qkv, int B, int S, int t, int C, int NH, int NKV) {
    const HeadView hv(S, C, NH, NKV);
    const int hs = hv.hs, group = NH / NKV;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel if(worth_threads(size_t(B) * C * (t + 1)))
    {
        std::vector<float> q(hs), row(hs), acc(hs), p(static_cast<size_t>(t) + 1);
#pragma omp for collapse(2)
        for (int b = 0; b < B; b++) {
            for (int h = 0; h < NH; h++) {
                load_row(q.data(), qkv + hv.q(b, t, h), hs, scale);
                float mx = -INFINITY;
                for (int u = 0; u <= t; u++) {
                    load_row(row.data(), qkv + hv.k(b, u, h / group), hs);
                    p[u] = dot(q.data(), row.data(), hs);
                    mx = p[u] > mx ? p[u] : mx;
                }
                float sum = 0.0f;
                for (int u = 0; u <= t; u++) {
                    p[u] = exp_fast(p[u] - mx);
                    sum += p[u];
                }
                std::fill(acc.begin(), acc.end(), 0.0f);
                for (int u = 0; u <= t; u++) {
                    load_row(row.data(), qkv + hv.v(b, u, h / group), hs);
                    axpy(acc.data(), p[u], row.data(), hs);
                }
                store_row(out + static_cast<size_t>(b) * C + static_cast<size_t>(h) * hs, acc.data(), hs, 1.0f / sum);
            }
        }
    }
}

template void attention_decode<float>(float*, const float*, int, int, int, int, int, int);
template void attention_decode<bf16>(bf16*, const bf16*, int, int, int, int, int, int);

}  // namespace sixnd::cpu
