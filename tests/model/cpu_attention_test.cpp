// Causal attention, naive and flash-style: forward against float64 (out, probabilities,
// log-sum-exp, each row's largest logit), backward against central differences of the float64
// forward, and flash against naive (out and dq, dk, dv) with T not a multiple of the 32-row tile, T below one
// tile, B and NH > 1, and three head sizes; each also with grouped-query shapes (NKV < NH: 2 of 4
// and multi-query 1 of 4 kv heads). Tolerances: FP32 2e-5 relative (softmax and dot
// products of up to T*hs terms in FP32); BF16 storage 1e-2 (each output rounded once, ~1e-3).
// The flash forward's vectorised row maximum equals the scalar loop, NaN and infinities included.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "core/memory.h"
#include "model/cpu/attention.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

struct Shape {
    int B, T, NH, hs;
    int NKV = 0;  // 0: NH (multi-head)
    int C() const { return NH * hs; }
    int kv() const { return NKV > 0 ? NKV : NH; }
    int W() const { return C() + 2 * kv() * hs; }  // qkv row: q [C] | k [kv*hs] | v [kv*hs]
    size_t qkv_size() const { return static_cast<size_t>(B) * T * W(); }
    size_t out_size() const { return static_cast<size_t>(B) * T * C(); }
};

struct AttnRef {
    std::vector<double> out, probs, lse, row_max;
};

AttnRef attention_ref(const std::vector<double>& qkv, const Shape& s) {
    const int C = s.C(), W = s.W(), group = s.NH / s.kv();
    AttnRef r{std::vector<double>(s.out_size()), std::vector<double>(static_cast<size_t>(s.B) * s.NH * s.T * s.T),
              std::vector<double>(static_cast<size_t>(s.B) * s.NH * s.T),
              std::vector<double>(static_cast<size_t>(s.B) * s.NH * s.T)};
    const double scale = 1 / std::sqrt(static_cast<double>(s.hs));
    std::vector<double> sc(s.T);
    for (int b = 0; b < s.B; b++)
        for (int h = 0; h < s.NH; h++)
            for (int t = 0; t < s.T; t++) {
                const double* q = &qkv[(static_cast<size_t>(b) * s.T + t) * W + h * s.hs];
                const int kh = h / group;
                double mx = -INFINITY;
                for (int u = 0; u <= t; u++) {
                    const double* k = &qkv[(static_cast<size_t>(b) * s.T + u) * W + C + kh * s.hs];
                    double d = 0;
                    for (int i = 0; i < s.hs; i++) d += q[i] * k[i];
                    sc[u] = d * scale;
                    mx = std::max(mx, sc[u]);
                }
                double sum = 0;
                for (int u = 0; u <= t; u++) sum += std::exp(sc[u] - mx);
                const size_t bh = static_cast<size_t>(b) * s.NH + h;
                r.lse[bh * s.T + t] = mx + std::log(sum);
                r.row_max[bh * s.T + t] = mx;
                double* o = &r.out[(static_cast<size_t>(b) * s.T + t) * C + h * s.hs];
                for (int u = 0; u <= t; u++) {
                    const double p = std::exp(sc[u] - mx) / sum;
                    r.probs[(bh * s.T + t) * s.T + u] = p;
                    const double* v = &qkv[(static_cast<size_t>(b) * s.T + u) * W + C + (s.kv() + kh) * s.hs];
                    for (int i = 0; i < s.hs; i++) o[i] += p * v[i];
                }
            }
    return r;
}

struct AttnRun {
    std::vector<float> out, stats, dqkv, row_max;
};

// Forward, then (if dout is given) backward, through the op set.
AttnRun run_attention(DType dt, AttentionKind kind, const Shape& s, const std::vector<float>& qkv,
                      const std::vector<float>* dout) {
    HostMemory mem;
    auto ops = make_cpu_ops(dt, mem);
    XBuf qkvb(dt, qkv), out(dt, s.out_size()), dqkv(dt, std::vector<float>(s.qkv_size(), 7.0f));
    std::vector<float> stats(Ops::attention_stats_floats(kind, s.B, s.T, s.NH), -1.0f);
    std::vector<float> row_max(static_cast<size_t>(s.B) * s.NH * s.T, NAN);
    ops->attention_forward(kind, out.ptr(), stats.data(), row_max.data(), qkvb.ptr(), s.B, s.T, s.C(), s.NH, s.kv());
    AttnRun r{out.values(), stats, {}, row_max};
    if (dout) {
        XBuf doutb(dt, *dout);
        ops->attention_backward(kind, dqkv.ptr(), doutb.ptr(), qkvb.ptr(), out.ptr(), stats.data(), s.B, s.T, s.C(),
                                s.NH, s.kv());
        r.dqkv = dqkv.values();
    }
    return r;
}

// Splits dqkv[B,T,W] into its q, k and v parts.
std::vector<float> part(const std::vector<float>& qkv, const Shape& s, int which) {
    std::vector<float> out;
    const size_t W = s.W(), kvw = static_cast<size_t>(s.kv()) * s.hs;
    const size_t lo = which == 0 ? 0 : which == 1 ? s.C() : s.C() + kvw;
    const size_t hi = which == 0 ? s.C() : which == 1 ? s.C() + kvw : W;
    for (size_t bt = 0; bt < static_cast<size_t>(s.B) * s.T; bt++)
        out.insert(out.end(), qkv.begin() + bt * W + lo, qkv.begin() + bt * W + hi);
    return out;
}

double tol(DType dt) { return dt == DType::f32 ? 2e-5 : 1e-2; }

}  // namespace

TEST(CpuAttention, NaiveForwardMatchesFloat64) {
    for (const Shape& s : {Shape{2, 13, 3, 16}, Shape{2, 13, 4, 16, 2}, Shape{1, 13, 4, 16, 1}})
    for (DType dt : {DType::f32, DType::bf16}) {
        auto qkv = round_to(dt, random_floats(s.qkv_size(), 1, -2.0f, 2.0f));
        auto ref = attention_ref(to_double(qkv), s);
        auto got = run_attention(dt, AttentionKind::naive, s, qkv, nullptr);
        EXPECT_LT(rel_error(got.out, ref.out), tol(dt)) << dtype_name(dt);
        EXPECT_LT(rel_error(got.stats, ref.probs), 1e-5) << dtype_name(dt);  // zeros above the diagonal included
        EXPECT_LT(rel_error(got.row_max, ref.row_max), 1e-6) << dtype_name(dt);
    }
}

TEST(CpuAttention, FlashForwardMatchesFloat64) {
    for (const Shape& s : {Shape{2, 45, 3, 16}, Shape{1, 70, 2, 64}, Shape{2, 45, 4, 16, 2}, Shape{1, 40, 4, 16, 1}}) {
        for (DType dt : {DType::f32, DType::bf16}) {
            auto qkv = round_to(dt, random_floats(s.qkv_size(), 2, -2.0f, 2.0f));
            auto ref = attention_ref(to_double(qkv), s);
            auto got = run_attention(dt, AttentionKind::flash, s, qkv, nullptr);
            EXPECT_LT(rel_error(got.out, ref.out), tol(dt)) << dtype_name(dt) << " T " << s.T;
            EXPECT_LT(rel_error(got.stats, ref.lse), 1e-6) << dtype_name(dt) << " T " << s.T;
            EXPECT_LT(rel_error(got.row_max, ref.row_max), 1e-6) << dtype_name(dt) << " T " << s.T;
        }
    }
}

// L = sum(dout * attention(qkv)); T = 35 spans two flash tiles.
TEST(CpuAttention, BackwardMatchesFiniteDifferences) {
    for (const Shape& s : {Shape{1, 35, 2, 8}, Shape{1, 35, 4, 8, 2}, Shape{1, 35, 3, 8, 1}}) {
    auto qkv = random_floats(s.qkv_size(), 3, -2.0f, 2.0f);
    auto dout = random_floats(s.out_size(), 4);
    auto g = numeric_grad([&](const std::vector<double>& x) { return weighted_sum(attention_ref(x, s).out, dout); },
                          to_double(qkv));
    for (AttentionKind kind : {AttentionKind::naive, AttentionKind::flash}) {
        auto got = run_attention(DType::f32, kind, s, qkv, &dout);
        EXPECT_LT(rel_error(got.dqkv, g), 2e-5) << attention_name(kind) << " NKV " << s.kv();
    }
    }
}

TEST(CpuAttention, FlashEqualsNaive) {
    for (int hs : {16, 48, 64}) {
        for (int T : {5, 70}) {
            for (const Shape& s : {Shape{2, T, 3, hs}, Shape{2, T, 4, hs, 2}})
            for (DType dt : {DType::f32, DType::bf16}) {
                auto qkv = round_to(dt, random_floats(s.qkv_size(), 5 + hs + T, -2.0f, 2.0f));
                auto dout = round_to(dt, random_floats(s.out_size(), 6 + hs + T));
                auto naive = run_attention(dt, AttentionKind::naive, s, qkv, &dout);
                auto flash = run_attention(dt, AttentionKind::flash, s, qkv, &dout);
                const double t = dt == DType::f32 ? 1e-5 : 1e-2;
                EXPECT_LT(rel_error(flash.out, naive.out), t) << dtype_name(dt) << " hs " << hs << " T " << T;
                for (int w = 0; w < 3; w++)
                    EXPECT_LT(rel_error(part(flash.dqkv, s, w), part(naive.dqkv, s, w)), t)
                        << "d"
                        << "qkv"[w] << " " << dtype_name(dt) << " hs " << hs << " T " << T << " NKV " << s.kv();
            }
        }
    }
}

TEST(CpuAttention, Bf16MatchesFp32) {
    const Shape s{2, 40, 2, 32};
    auto qkv = round_to(DType::bf16, random_floats(s.qkv_size(), 7, -2.0f, 2.0f));
    auto dout = round_to(DType::bf16, random_floats(s.out_size(), 8));
    for (AttentionKind kind : {AttentionKind::naive, AttentionKind::flash}) {
        auto f = run_attention(DType::f32, kind, s, qkv, &dout);
        auto h = run_attention(DType::bf16, kind, s, qkv, &dout);
        EXPECT_LT(rel_error(h.out, f.out), 1e-2) << attention_name(kind);
        EXPECT_LT(rel_error(h.dqkv, f.dqkv), 1e-2) << attention_name(kind);
        EXPECT_EQ(h.stats.size(), f.stats.size());
    }
}

// Work is split by (batch, head), so the bits do not depend on the thread count either.
TEST(CpuAttention, DeterministicAcrossThreadCounts) {
    for (const Shape& s : {Shape{2, 50, 3, 16}, Shape{2, 50, 4, 16, 2}}) {
    auto qkv = random_floats(s.qkv_size(), 9, -2.0f, 2.0f);
    auto dout = random_floats(s.out_size(), 10);
    const int saved = omp_get_max_threads();
    for (AttentionKind kind : {AttentionKind::naive, AttentionKind::flash}) {
        omp_set_num_threads(1);
        auto one = run_attention(DType::f32, kind, s, qkv, &dout);
        omp_set_num_threads(3);
        auto three = run_attention(DType::f32, kind, s, qkv, &dout);
        EXPECT_EQ(one.out, three.out) << attention_name(kind);
        EXPECT_EQ(one.dqkv, three.dqkv) << attention_name(kind);
    }
    omp_set_num_threads(saved);
    }
}

// A decoding step at row t equals row t of full causal attention; rows after t are ignored.
TEST(CpuAttention, DecodeMatchesFullAttentionRow) {
    for (const Shape& s : {Shape{2, 23, 3, 16}, Shape{2, 23, 4, 16, 2}, Shape{1, 23, 4, 16, 1}})
    for (DType dt : {DType::f32, DType::bf16}) {
        const int C = s.C();
        auto qkv = round_to(dt, random_floats(s.qkv_size(), 11, -2.0f, 2.0f));
        auto ref = attention_ref(to_double(qkv), s);
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf qkvb(dt, qkv);
        for (int t : {0, 9, s.T - 1}) {
            XBuf out(dt, static_cast<size_t>(s.B) * C);
            ops->attention_decode(out.ptr(), qkvb.ptr(), s.B, s.T, t, C, s.NH, s.kv());
            std::vector<double> want;
            for (int b = 0; b < s.B; b++) {
                auto row = ref.out.begin() + (static_cast<size_t>(b) * s.T + t) * C;
                want.insert(want.end(), row, row + C);
            }
            EXPECT_LT(rel_error(out.values(), want), tol(dt)) << dtype_name(dt) << " t " << t;
        }
    }
}

// The flash forward's vectorised row maximum against the scalar loop it replaced, for every
// length up to past two vectors: NaN never wins (wherever it sits), infinities and a start value
// above every score are kept. The two may differ only in the sign of a zero maximum.
TEST(CpuAttention, RowMaxEqualsScalarLoop) {
    std::vector<float> s = random_floats(40, 7, -3.0f, 3.0f);
    s[3] = NAN;
    s[17] = -INFINITY;
    s[21] = NAN;
    for (float start : {-INFINITY, 0.5f, 10.0f})
        for (int n = 0; n <= 40; n++) {
            float want = start;
            for (int c = 0; c < n; c++) want = s[c] > want ? s[c] : want;
            EXPECT_EQ(cpu::max_with(start, s.data(), n), want) << "n=" << n << " start=" << start;
        }
    std::vector<float> inf(20, 1.0f);
    inf[13] = INFINITY;
    EXPECT_EQ(cpu::max_with(-INFINITY, inf.data(), 20), INFINITY);
}
