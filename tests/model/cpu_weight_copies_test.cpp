// The FP32 weight copies of the widened BF16 matmul (model/cpu/weight_copies.h): a matmul that
// keeps its weight's copy gives the same bits as one that widens the weight per call, and keeps
// doing so after any write to the weight (one element, a whole new content at the same address,
// a sign of zero); the copies are in the ledger, within their budget, and of parameter memory only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/cpu/matmul.h"
#include "model/cpu/weight_copies.h"
#include "tests/util/ops_test_util.h"
#include "tests/util/test_util.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

std::vector<bf16> bf16_values(size_t n, uint64_t seed) {
    std::vector<bf16> v;
    for (float x : random_floats(n, seed)) v.push_back(bf16(x));
    return v;
}

// c = op(a) op(b) through `mm`, b marked as a weight.
std::vector<bf16> product(cpu::Matmul& mm, const std::vector<bf16>& a, const bf16* b, const cpu::GemmShape& s) {
    std::vector<bf16> c(static_cast<size_t>(s.M) * s.N);
    mm.run(c.data(), a.data(), b, nullptr, s);
    return c;
}

// n bf16 values in parameter memory (only weights there are kept).
struct Weight {
    Weight(MemoryBackend& mem, size_t n, uint64_t seed) : buf(&mem, n * sizeof(bf16), MemCategory::params), n(n) {
        fill(seed);
    }
    bf16* data() { return buf.as<bf16>(); }
    void fill(uint64_t seed) {
        const auto v = bf16_values(n, seed);
        std::copy(v.begin(), v.end(), data());
    }
    DeviceBuffer buf;
    size_t n;
};

bool same_bits(const std::vector<bf16>& x, const std::vector<bf16>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(bf16)) == 0;
}

}  // namespace

// Widened with the weight kept against widened per call, on shapes cut along M, N and K (the
// chunking differs where the weight is kept, so those are compared to FP32-reference tolerance;
// uncut shapes bit for bit), after each kind of write to the weight.
TEST(CpuWeightCopies, KeptWeightMatchesPerCallWideningAfterEveryWrite) {
    struct Case {
        int M, N, K;
        size_t budget;
    };
    for (const Case& k : {Case{37, 71, 83, cpu::kWidenBudget}, Case{200, 70, 90, 4096}, Case{70, 200, 90, 4096},
                          Case{70, 90, 200, 4096}})
        for (bool bt : {false, true}) {
            HostMemory mem;
            cpu::Matmul kept(DType::bf16, cpu::Bf16Math::fp32, k.budget, &mem);
            cpu::Matmul per_call(DType::bf16, cpu::Bf16Math::fp32, k.budget);
            const cpu::GemmShape s{k.M, k.N, k.K, false, bt, false, true};
            const auto a = bf16_values(static_cast<size_t>(k.M) * k.K, 1);
            Weight w(mem, static_cast<size_t>(k.K) * k.N, 2);
            bf16* b = w.data();
            const bool whole = k.budget == cpu::kWidenBudget;
            auto check = [&](const char* after) {
                const auto got = product(kept, a, b, s), want = product(per_call, a, b, s);
                if (whole) {
                    EXPECT_TRUE(same_bits(got, want)) << after << " b_trans " << bt;
                } else {
                    std::vector<float> g(got.begin(), got.end()), w(want.begin(), want.end());
                    EXPECT_LT(rel_error(g, w), 5e-3) << after << " " << k.M << "x" << k.N << "x" << k.K;
                }
            };
            check("first use");
            check("second use, weight unchanged");
            b[w.n / 2] = bf16(float(b[w.n / 2]) * 3.0f + 1.0f);
            check("one element written");
            w.fill(3);  // new content at the same address (a reused ZeRO-3 buffer)
            check("whole weight rewritten");
#ifdef SIXND_HAVE_ONEDNN  // the portable GEMM widens as it packs and keeps nothing
            EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), w.n * 6);
#endif
        }
}

// The copy tracks bits, not values: +0 turned into -0 is a write like any other.
TEST(CpuWeightCopies, CopyIsExactWidening) {
    HostMemory mem;
    cpu::WeightCopies copies(mem);
    Weight weight(mem, 10000, 4);
    bf16* w = weight.data();
    w[5] = bf16(0.0f);
    const float* f = copies.get(w, weight.n);
    ASSERT_NE(f, nullptr);
    w[5] = bf16(-0.0f);
    w[9999] = bf16(7.0f);
    f = copies.get(w, weight.n);
    for (size_t i = 0; i < weight.n; i++) {
        const float want = float(w[i]);
        ASSERT_EQ(std::memcmp(&f[i], &want, sizeof(float)), 0) << i;
    }
}

// 6 bytes per element in MemCategory::weight_copies; once the budget is full no further weight
// is kept (those already kept stay, and stay right); nothing outside parameter memory is kept;
// all returned when the copies go.
TEST(CpuWeightCopies, LedgerBudgetAndParameterMemoryOnly) {
    HostMemory mem;
    const size_t n = 1000;
    Weight w1(mem, n, 5), w2(mem, n, 6), w3(mem, n, 7);
    {
        cpu::WeightCopies copies(mem, 2 * n * 6);
        ASSERT_NE(copies.get(w1.data(), n), nullptr);
        ASSERT_NE(copies.get(w2.data(), n), nullptr);
        EXPECT_EQ(copies.get(w3.data(), n), nullptr);
        EXPECT_EQ(copies.bytes(), 2 * n * 6);
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), 2 * n * 6);
        w1.data()[n - 1] = bf16(float(w1.data()[n - 1]) + 1.0f);
        const float* f1 = copies.get(w1.data(), n);
        ASSERT_NE(f1, nullptr);
        EXPECT_EQ(f1[n - 1], float(w1.data()[n - 1]));
        EXPECT_EQ(copies.get(w1.data(), n / 2), nullptr);  // another length at the same address: another weight
    }
    EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), 0u);
    cpu::WeightCopies copies(mem);
    DeviceBuffer scratch(&mem, n * sizeof(bf16), MemCategory::workspace);
    std::vector<bf16> host = bf16_values(n, 8);
    std::copy(host.begin(), host.end(), scratch.as<bf16>());
    EXPECT_EQ(copies.get(scratch.as<bf16>(), n), nullptr);
    EXPECT_EQ(copies.get(host.data(), n), nullptr);
    EXPECT_EQ(copies.get(w1.data() + 10, n), nullptr);  // runs past the end of w1's allocation
    EXPECT_NE(copies.get(w1.data() + 10, n - 10), nullptr);
    EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), (n - 10) * 6);
}

// The op set keeps copies only on the widened path: the native one (or FP32) holds none.
TEST(CpuWeightCopies, OnlyTheWidenedPathKeepsCopies) {
    const int N = 16, C = 32, OC = 48;
    for (cpu::Bf16Math math : {cpu::Bf16Math::fp32, cpu::Bf16Math::native}) {
        HostMemory mem;
        auto ops = make_cpu_ops(DType::bf16, mem, math);
        XBuf inp(DType::bf16, random_floats(static_cast<size_t>(N) * C, 9)), out(DType::bf16, static_cast<size_t>(N) * OC);
        Weight w(mem, size_t(OC) * C, 10);
        ops->matmul_forward(out.ptr(), nullptr, inp.ptr(), w.data(), nullptr, N, C, OC);
#ifdef SIXND_HAVE_ONEDNN
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), math == cpu::Bf16Math::fp32 ? size_t(OC) * C * 6 : 0u);
#else
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), 0u);
#endif
    }
}
