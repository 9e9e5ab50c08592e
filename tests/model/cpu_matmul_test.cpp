// The CPU matmul engine (oneDNN or portable) and the Linear ops built on it, against float64.
// Tolerances: FP32 results are ~1e-7 * sqrt(K) from exact, so 1e-5 relative; BF16 storage adds
// one rounding of the output (2^-9 relative at most, ~1e-3 as a norm), so 5e-3.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/cpu/gemm_packed.h"
#include "model/cpu/kernels.h"
#include "model/cpu/matmul.h"
#include "model/cpu/simd.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

double tol(DType dt) { return dt == DType::f32 ? 1e-5 : 5e-3; }

// c (+)= op(a) op(b) + bias in double, with the GemmShape conventions of matmul.h.
std::vector<double> gemm_ref(const std::vector<float>& c0, const std::vector<float>& a, const std::vector<float>& b,
                             const std::vector<float>* bias, const cpu::GemmShape& s) {
    std::vector<double> c(static_cast<size_t>(s.M) * s.N);
    for (int m = 0; m < s.M; m++)
        for (int n = 0; n < s.N; n++) {
            double acc = bias ? (*bias)[n] : 0.0;
            for (int k = 0; k < s.K; k++) {
                double av = s.a_trans ? a[static_cast<size_t>(k) * s.M + m] : a[static_cast<size_t>(m) * s.K + k];
                double bv = s.b_trans ? b[static_cast<size_t>(n) * s.K + k] : b[static_cast<size_t>(k) * s.N + n];
                acc += av * bv;
            }
            if (s.accumulate) acc += c0[static_cast<size_t>(m) * s.N + n];
            c[static_cast<size_t>(m) * s.N + n] = acc;
        }
    return c;
}

// Every transpose / accumulate / bias combination through `run`, against gemm_ref.
template <typename Run>
void check_all_forms(DType dt, Run run, int M, int N, int K) {
    uint64_t seed = 100;
    for (bool at : {false, true})
        for (bool bt : {false, true})
            for (bool accumulate : {false, true})
                for (bool with_bias : {false, true}) {
                    cpu::GemmShape s{M, N, K, at, bt, accumulate};
                    auto a = round_to(dt, random_floats(static_cast<size_t>(M) * K, seed++));
                    auto b = round_to(dt, random_floats(static_cast<size_t>(K) * N, seed++));
                    auto bias = round_to(dt, random_floats(N, seed++));
                    auto c0 = round_to(dt, random_floats(static_cast<size_t>(M) * N, seed++));
                    XBuf ab(dt, a), bb(dt, b), biasb(dt, bias), cb(dt, c0);
                    run(cb.ptr(), ab.ptr(), bb.ptr(), with_bias ? biasb.ptr() : nullptr, s);
                    auto ref = gemm_ref(c0, a, b, with_bias ? &bias : nullptr, s);
                    EXPECT_LT(rel_error(cb.values(), ref), tol(dt))
                        << "a_trans " << at << " b_trans " << bt << " accumulate " << accumulate << " bias "
                        << with_bias << " " << dtype_name(dt);
                }
}

}  // namespace

TEST(CpuMatmul, EngineIsTheOneTheBuildChose) {
#ifdef SIXND_HAVE_ONEDNN
    EXPECT_STREQ(cpu::Matmul::engine(), "oneDNN");
#else
    EXPECT_STREQ(cpu::Matmul::engine(), "portable");
#endif
}

TEST(CpuMatmul, EngineAllFormsMatchFloat64) {
    for (DType dt : {DType::f32, DType::bf16}) {
        cpu::Matmul mm(dt);
        auto run = [&](void* c, const void* a, const void* b, const void* bias, const cpu::GemmShape& s) {
            mm.run(c, a, b, bias, s);
        };
        check_all_forms(dt, run, 37, 71, 83);
        check_all_forms(dt, run, 70, 97, 140);
    }
}

// BF16 on both paths: oneDNN's bf16 kernels (CPUs with BF16 dot products) and the packed GEMM
// (bf16 packed into FP32 panels, FP32 products, one rounding) that CPUs without them run — forced
// here, so both are checked on one machine. The shapes cover partial micro-tiles in M and N, K
// cut into blocks (FP32 partial sums, one rounding) and a handful of rows (panels shared out
// over the threads).
TEST(CpuMatmul, Bf16NativeAndPackedMatchFloat64) {
    for (cpu::Bf16Math math : {cpu::Bf16Math::native, cpu::Bf16Math::fp32}) {
        if (math == cpu::Bf16Math::native && !cpu_features().native_bf16()) {
            std::printf("native bf16 path not checked: this CPU (%s) has no BF16 dot products\n",
                        cpu_features().flags().c_str());
            continue;
        }
        if (math == cpu::Bf16Math::native && std::string(cpu::Matmul::engine()) == "portable") {
            std::printf("native bf16 path not checked: this build has no oneDNN (the packed GEMM runs bf16)\n");
            continue;
        }
        cpu::Matmul mm(DType::bf16, math);
        EXPECT_STREQ(mm.bf16_math(), math == cpu::Bf16Math::fp32 ? "fp32" : "bf16");
        auto run = [&](void* c, const void* a, const void* b, const void* bias, const cpu::GemmShape& s) {
            mm.run(c, a, b, bias, s);
        };
        check_all_forms(DType::bf16, run, 37, 71, 83);
        check_all_forms(DType::bf16, run, 200, 70, 90);
        check_all_forms(DType::bf16, run, 70, 200, 90);
        check_all_forms(DType::bf16, run, 13, 37, 1700);  // K in blocks
        check_all_forms(DType::bf16, run, 5, 40, 50);     // fewer rows than a micro-tile
    }
}

// Without SIXND_CPU_ISA the automatic choice follows the CPU; with it, the capped features.
TEST(CpuMatmul, AutomaticBf16MathFollowsTheCpuFeatures) {
    cpu::Matmul mm(DType::bf16);
#ifdef SIXND_HAVE_ONEDNN
    EXPECT_STREQ(mm.bf16_math(), cpu_features().bf16_matmul_native() ? "bf16" : "fp32");
    if (cpu_features().isa_cap == "avx2") {
        EXPECT_EQ(cpu::Matmul::engine_isa(), "avx2");
    }
#else
    EXPECT_STREQ(mm.bf16_math(), "fp32");
#endif
}

TEST(CpuMatmul, PackedGemmAllFormsMatchFloat64) {
    for (DType dt : {DType::f32, DType::bf16}) {
        auto run = [&](void* c, const void* a, const void* b, const void* bias, const cpu::GemmShape& s) {
            cpu::gemm_packed(dt, c, a, b, nullptr, bias, s);
        };
        check_all_forms(dt, run, 37, 71, 83);
        check_all_forms(dt, run, 70, 97, 140);
        check_all_forms(dt, run, 29, 33, 2100);  // K in two blocks, the last one short
        check_all_forms(dt, run, 1, 300, 64);     // one row: the panels are shared out
    }
}

// The packed GEMM sums every output element's products in the order of k, one multiply-add
// each, however the work is cut: it equals that scalar chain bit for bit (K whole or in blocks),
// with one thread or several, B packed per call or kept packed (in any row blocks).
void expect_k_order_chain(int M, int N, int K, bool at, bool bt, bool with_bias) {
    const cpu::GemmShape s{M, N, K, at, bt, true};
    const auto a = round_to(DType::bf16, random_floats(static_cast<size_t>(M) * K, 61));
    const auto b = round_to(DType::bf16, random_floats(static_cast<size_t>(K) * N, 62));
    const auto c0 = round_to(DType::bf16, random_floats(static_cast<size_t>(M) * N, 63));
    const auto bias = round_to(DType::bf16, random_floats(N, 64));
    std::vector<float> chain(static_cast<size_t>(M) * N);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) {
                const float av = at ? a[static_cast<size_t>(k) * M + m] : a[static_cast<size_t>(m) * K + k];
                const float bv = bt ? b[static_cast<size_t>(n) * K + k] : b[static_cast<size_t>(k) * N + n];
                acc = cpu::fma_as_vectors(av, bv, acc);
            }
            if (with_bias) acc += bias[n];
            chain[static_cast<size_t>(m) * N + n] = float(bf16(acc + c0[static_cast<size_t>(m) * N + n]));
        }
    XBuf ab(DType::bf16, a), bb(DType::bf16, b), biasb(DType::bf16, bias);
    auto product = [&](int threads, const bf16* packed) {
        XBuf cb(DType::bf16, c0);
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        cpu::gemm_packed(DType::bf16, cb.ptr(), ab.ptr(), bb.ptr(), packed, with_bias ? biasb.ptr() : nullptr, s);
        omp_set_num_threads(before);
        return cb.values();
    };
    const std::string form = std::to_string(M) + " x " + std::to_string(N) + " K " + std::to_string(K) +
                             " a_trans " + std::to_string(at) + " b_trans " + std::to_string(bt) + " bias " +
                             std::to_string(with_bias);
    EXPECT_EQ(product(1, nullptr), chain) << form;
    EXPECT_EQ(product(3, nullptr), chain) << form;
    // Kept panels, packed in uneven blocks of the stored rows (multiples of 16 where stored
    // [N][K], as the weight copies cut them).
    std::vector<bf16> packed(cpu::packed_b_size(K, N), bf16(-1.0f));
    const int stored_rows = bt ? N : K, step = bt ? 32 : 77;
    for (int r0 = 0; r0 < stored_rows; r0 += step)
        cpu::pack_b_rows(packed.data(), static_cast<const bf16*>(bb.ptr()), bt, K, N, r0,
                         std::min(stored_rows, r0 + step));
    EXPECT_EQ(product(2, packed.data()), chain) << form;
}

TEST(CpuMatmul, PackedGemmIsTheKOrderChainWhateverTheCut) {
    for (int K : {700, 1700})
        for (bool at : {false, true})
            for (bool bt : {false, true}) {
                expect_k_order_chain(100, 90, K, at, bt, true);
                // Wider than tall without bias: the weight-gradient form (a_trans, B packed per
                // call) is computed transposed.
                expect_k_order_chain(60, 130, K, at, bt, false);
            }
}

// The GELU epilogue (Linear + GELU in one pass) writes what gelu_forward makes of the rounded
// product, bit for bit, on whole and partial micro-tiles, through the packed GEMM and the matmul.
TEST(CpuMatmul, GeluEpilogueIsGeluForwardOfTheProduct) {
    const int M = 40, N = 37, K = 50;
    const cpu::GemmShape s{M, N, K, false, true, false, true};
    for (DType dt : {DType::f32, DType::bf16}) {
        XBuf a(dt, random_floats(static_cast<size_t>(M) * K, 71)), b(dt, random_floats(static_cast<size_t>(K) * N, 72));
        XBuf bias(dt, random_floats(N, 73));
        XBuf pre(dt, static_cast<size_t>(M) * N), act(dt, static_cast<size_t>(M) * N), want(dt, static_cast<size_t>(M) * N);
        cpu::gemm_packed(dt, pre.ptr(), a.ptr(), b.ptr(), nullptr, bias.ptr(), s, act.ptr());
        if (dt == DType::f32) cpu::gelu_forward(static_cast<float*>(want.ptr()), static_cast<const float*>(pre.ptr()), want.size());
        else cpu::gelu_forward(static_cast<bf16*>(want.ptr()), static_cast<const bf16*>(pre.ptr()), want.size());
        EXPECT_EQ(act.values(), want.values()) << dtype_name(dt);
        for (cpu::Bf16Math math : {cpu::Bf16Math::automatic, cpu::Bf16Math::fp32}) {
            cpu::Matmul mm(dt, math);
            XBuf pre2(dt, static_cast<size_t>(M) * N), act2(dt, static_cast<size_t>(M) * N);
            mm.run(pre2.ptr(), a.ptr(), b.ptr(), bias.ptr(), s, act2.ptr());
            XBuf want2(dt, static_cast<size_t>(M) * N);
            if (dt == DType::f32) cpu::gelu_forward(static_cast<float*>(want2.ptr()), static_cast<const float*>(pre2.ptr()), want2.size());
            else cpu::gelu_forward(static_cast<bf16*>(want2.ptr()), static_cast<const bf16*>(pre2.ptr()), want2.size());
            EXPECT_EQ(act2.values(), want2.values()) << dtype_name(dt) << " " << mm.bf16_math();
        }
    }
}

TEST(CpuMatmul, CachedPrimitivesServeRepeatedAndMixedShapes) {
    cpu::Matmul mm(DType::f32);
    for (int rep = 0; rep < 3; rep++)
        for (int M : {5, 17}) {
            cpu::GemmShape s{M, 9, 11, false, true, false};
            auto a = random_floats(static_cast<size_t>(M) * 11, 7 + rep);
            auto b = random_floats(9 * 11, 8 + rep);
            std::vector<float> c(static_cast<size_t>(M) * 9);
            mm.run(c.data(), a.data(), b.data(), nullptr, s);
            EXPECT_LT(rel_error(c, gemm_ref(c, a, b, nullptr, s)), 1e-6);
        }
}

// BF16 gradients accumulate in FP32 and are rounded once: every element is within half a bf16
// ulp (plus FP32 noise) of the exact old + sum, which a second rounding would break.
// Both bf16 paths; for the packed GEMM also with K cut into blocks (partial sums stay FP32).
TEST(CpuMatmul, Bf16AccumulateRoundsOnce) {
    const int M = 64, N = 48;
    for (int K : {96, 1700}) {
        cpu::GemmShape s{M, N, K, true, false, true};
        auto a = round_to(DType::bf16, random_floats(static_cast<size_t>(M) * K, 1));
        auto b = round_to(DType::bf16, random_floats(static_cast<size_t>(K) * N, 2));
        auto c0 = round_to(DType::bf16, random_floats(static_cast<size_t>(M) * N, 3, -4.0f, 4.0f));
        auto ref = gemm_ref(c0, a, b, nullptr, s);
        for (cpu::Bf16Math math : {cpu::Bf16Math::automatic, cpu::Bf16Math::fp32}) {
            cpu::Matmul mm(DType::bf16, math);
            XBuf ab(DType::bf16, a), bb(DType::bf16, b), cb(DType::bf16, c0);
            mm.run(cb.ptr(), ab.ptr(), bb.ptr(), nullptr, s);
            auto out = cb.values();
            double worst = 0;
            for (size_t i = 0; i < out.size(); i++)
                worst = std::max(worst, std::fabs(out[i] - ref[i]) / bf16_half_ulp(ref[i]));
            EXPECT_LT(worst, 1.01) << mm.bf16_math() << ", K " << K;
        }
    }
}

namespace {

// out = inp W^T + b in double.
std::vector<double> linear_ref(const std::vector<double>& inp, const std::vector<double>& w,
                               const std::vector<double>& b, int N, int C, int OC) {
    std::vector<double> out(static_cast<size_t>(N) * OC);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double acc = b[o];
            for (int c = 0; c < C; c++) acc += inp[static_cast<size_t>(n) * C + c] * w[static_cast<size_t>(o) * C + c];
            out[static_cast<size_t>(n) * OC + o] = acc;
        }
    return out;
}

double gelu_ref(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

}  // namespace

TEST(CpuMatmul, LinearForwardWithAndWithoutGelu) {
    const int N = 23, C = 45, OC = 67;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        auto inp = round_to(dt, random_floats(static_cast<size_t>(N) * C, 11));
        auto w = round_to(dt, random_floats(static_cast<size_t>(OC) * C, 12));
        auto b = round_to(dt, random_floats(OC, 13));
        auto ref = linear_ref(to_double(inp), to_double(w), to_double(b), N, C, OC);
        XBuf ib(dt, inp), wb(dt, w), bb(dt, b), out(dt, ref.size()), pre(dt, ref.size());
        ops->matmul_forward(out.ptr(), nullptr, ib.ptr(), wb.ptr(), bb.ptr(), N, C, OC);
        EXPECT_LT(rel_error(out.values(), ref), tol(dt)) << dtype_name(dt);

        ops->matmul_forward(out.ptr(), pre.ptr(), ib.ptr(), wb.ptr(), bb.ptr(), N, C, OC);
        EXPECT_LT(rel_error(pre.values(), ref), tol(dt)) << dtype_name(dt);
        std::vector<double> gref(ref.size());
        auto prev = pre.values();  // gelu is applied to the stored pre-activation
        for (size_t i = 0; i < ref.size(); i++) gref[i] = gelu_ref(prev[i]);
        EXPECT_LT(rel_error(out.values(), gref), dt == DType::f32 ? 1e-6 : 5e-3) << dtype_name(dt);

        XBuf out_nb(dt, ref.size());
        ops->matmul_forward(out_nb.ptr(), nullptr, ib.ptr(), wb.ptr(), nullptr, N, C, OC);
        auto ref_nb = linear_ref(to_double(inp), to_double(w), std::vector<double>(OC, 0.0), N, C, OC);
        EXPECT_LT(rel_error(out_nb.values(), ref_nb), tol(dt)) << dtype_name(dt);
    }
}

// Backward against central differences of the float64 forward, for L = sum(dout * out):
// dinp is overwritten; dweight and dbias accumulate onto what they held.
TEST(CpuMatmul, LinearBackwardMatchesFiniteDifferences) {
    const int N = 7, C = 13, OC = 11;
    auto inp = random_floats(static_cast<size_t>(N) * C, 21);
    auto w = random_floats(static_cast<size_t>(OC) * C, 22);
    auto b = random_floats(OC, 23);
    auto dout = random_floats(static_cast<size_t>(N) * OC, 24);
    auto dw0 = random_floats(w.size(), 25);
    auto db0 = random_floats(OC, 26);
    auto gi = numeric_grad(
        [&](const std::vector<double>& x) {
            return weighted_sum(linear_ref(x, to_double(w), to_double(b), N, C, OC), dout);
        },
        to_double(inp));
    auto gw = numeric_grad(
        [&](const std::vector<double>& x) {
            return weighted_sum(linear_ref(to_double(inp), x, to_double(b), N, C, OC), dout);
        },
        to_double(w));
    auto gb = numeric_grad(
        [&](const std::vector<double>& x) {
            return weighted_sum(linear_ref(to_double(inp), to_double(w), x, N, C, OC), dout);
        },
        to_double(b));
    for (size_t i = 0; i < gw.size(); i++) gw[i] += dw0[i];
    for (size_t i = 0; i < gb.size(); i++) gb[i] += db0[i];

    HostMemory mem;
    auto ops = make_cpu_ops(DType::f32, mem);
    std::vector<float> dinp(inp.size(), 123.0f), dw = dw0, db = db0;
    ops->matmul_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, C, OC);
    EXPECT_LT(rel_error(dinp, gi), 1e-5);
    EXPECT_LT(rel_error(dw, gw), 1e-5);
    EXPECT_LT(rel_error(db, gb), 1e-5);

    // Without dinp and dbias only dweight moves.
    std::vector<float> dw2 = dw0;
    ops->matmul_backward(nullptr, dw2.data(), nullptr, dout.data(), inp.data(), w.data(), N, C, OC);
    EXPECT_LT(rel_error(dw2, gw), 1e-5);
}

TEST(CpuMatmul, Bf16LinearBackwardMatchesFp32) {
    const int N = 29, C = 40, OC = 57;
    const DType h = DType::bf16;
    auto inp = round_to(h, random_floats(static_cast<size_t>(N) * C, 31));
    auto w = round_to(h, random_floats(static_cast<size_t>(OC) * C, 32));
    auto dout = round_to(h, random_floats(static_cast<size_t>(N) * OC, 33));
    auto dw0 = round_to(h, random_floats(w.size(), 34));
    auto db0 = round_to(h, random_floats(OC, 35));
    std::vector<std::vector<float>> res[2];
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf ib(dt, inp), wb(dt, w), db(dt, dout), dinp(dt, inp.size()), dw(dt, dw0), dbias(dt, db0);
        ops->matmul_backward(dinp.ptr(), dw.ptr(), dbias.ptr(), db.ptr(), ib.ptr(), wb.ptr(), N, C, OC);
        res[dt == DType::bf16] = {dinp.values(), dw.values(), dbias.values()};
    }
    for (int i = 0; i < 3; i++) EXPECT_LT(rel_error(res[1][i], res[0][i]), 5e-3) << "output " << i;
}

TEST(CpuMatmul, BackwardIsDeterministic) {
    const int N = 64, C = 96, OC = 160;
    for (DType dt : {DType::f32, DType::bf16}) {
        HostMemory mem;
        auto ops = make_cpu_ops(dt, mem);
        XBuf inp(dt, random_floats(static_cast<size_t>(N) * C, 41)),
            w(dt, random_floats(static_cast<size_t>(OC) * C, 42)),
            dout(dt, random_floats(static_cast<size_t>(N) * OC, 43));
        std::vector<float> first[3];
        for (int rep = 0; rep < 2; rep++) {
            XBuf dinp(dt, inp.size()), dw(dt, w.size()), db(dt, static_cast<size_t>(OC));
            ops->matmul_backward(dinp.ptr(), dw.ptr(), db.ptr(), dout.ptr(), inp.ptr(), w.ptr(), N, C, OC);
            std::vector<float> got[3] = {dinp.values(), dw.values(), db.values()};
            for (int i = 0; i < 3; i++) {
                if (rep == 0)
                    first[i] = got[i];
                else
                    EXPECT_EQ(first[i], got[i]) << "output " << i << " " << dtype_name(dt);
            }
        }
    }
}

// An FP32 weight gradient (dW += dout^T inp, a stored transposed) is the same bits on any thread
// count: oneDNN split its sum over the tokens between threads, and a run resumed on another
// thread count went on with other bits.
TEST(CpuMatmul, Fp32WeightGradientIgnoresTheThreadCount) {
    const int N = 4096, C = 64, OC = 192;
    const auto inp = random_floats(static_cast<size_t>(N) * C, 51), dout = random_floats(static_cast<size_t>(N) * OC, 52),
               dw0 = random_floats(static_cast<size_t>(OC) * C, 53);
    const cpu::GemmShape s{OC, C, N, /*a_trans=*/true, /*b_trans=*/false, /*accumulate=*/true};
    auto product = [&](int threads) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        cpu::Matmul mm(DType::f32);
        std::vector<float> dw = dw0;
        mm.run(dw.data(), dout.data(), inp.data(), nullptr, s);
        omp_set_num_threads(before);
        return dw;
    };
    const std::vector<float> one = product(1);
    EXPECT_EQ(product(2), one);
    EXPECT_EQ(product(3), one);
}
