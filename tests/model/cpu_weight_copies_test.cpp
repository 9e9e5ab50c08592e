// The packed weight panels of the FP32 path of BF16 (model/cpu/weight_copies.h): a matmul that
// keeps its weight's panels gives the same bits as one that packs the weight per call, and keeps
// doing so after any write to the weight (one element, a whole new content at the same address,
// a sign of zero), in both roles of a weight; the copies are in the ledger, within their budget,
// and of parameter memory only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/cpu/gemm_packed.h"
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

// Bytes the copies of a weight w[rows, cols] take: the W panels always (they are also the
// record of what was packed), the W^T panels once a forward used them.
size_t copy_bytes(int rows, int cols, bool fwd) {
    size_t b = cpu::packed_b_size(rows, cols) * sizeof(bf16);
    if (fwd) b += cpu::packed_b_size(cols, rows) * sizeof(bf16);
    return b;
}

// Kept against packed per call, bit for bit, on shapes with partial panels and K in blocks, in
// both roles of the weight (W^T as in forward, W as for the input gradient), after each kind of
// write to the weight.
TEST(CpuWeightCopies, KeptWeightMatchesPerCallPackingAfterEveryWrite) {
    struct Case {
        int M, N, K;
    };
    for (const Case& k : {Case{37, 71, 83}, Case{200, 70, 90}, Case{70, 200, 90}, Case{20, 90, 1200}}) {
        HostMemory mem;
        cpu::Matmul kept(DType::bf16, cpu::Bf16Math::fp32, &mem);
        cpu::Matmul per_call(DType::bf16, cpu::Bf16Math::fp32);
        // One weight, stored [N][K] = [OC][C]: used as W^T (b_trans, out = x W^T) and as W (the
        // input gradient's dout W, where K and N swap).
        Weight w(mem, static_cast<size_t>(k.K) * k.N, 2);
        bf16* b = w.data();
        const cpu::GemmShape fwd{k.M, k.N, k.K, false, true, false, true};
        const cpu::GemmShape bwd{k.M, k.K, k.N, false, false, false, true};
        const auto x = bf16_values(static_cast<size_t>(k.M) * k.K, 1);
        const auto dy = bf16_values(static_cast<size_t>(k.M) * k.N, 11);
        auto check = [&](const char* after) {
            EXPECT_TRUE(same_bits(product(kept, x, b, fwd), product(per_call, x, b, fwd)))
                << after << ", as W^T, " << k.M << "x" << k.N << "x" << k.K;
            EXPECT_TRUE(same_bits(product(kept, dy, b, bwd), product(per_call, dy, b, bwd)))
                << after << ", as W, " << k.M << "x" << k.N << "x" << k.K;
        };
        check("first use");
        check("second use, weight unchanged");
        b[w.n / 2] = bf16(float(b[w.n / 2]) * 3.0f + 1.0f);
        check("one element written");
        b[0] = bf16(-float(b[0]));
        b[w.n - 1] = bf16(float(b[w.n - 1]) + 2.0f);
        check("first and last elements written");
        w.fill(3);  // new content at the same address (a reused ZeRO-3 buffer)
        check("whole weight rewritten");
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), copy_bytes(k.N, k.K, true));
    }
}

// The panels track bits, not values: +0 turned into -0 is a write like any other. They equal a
// fresh packing of the weight as it is now, in either role, however it got there.
TEST(CpuWeightCopies, PanelsAreTheExactPacking) {
    HostMemory mem;
    cpu::WeightCopies copies(mem);
    const int rows = 75, cols = 133;  // neither a multiple of 16
    Weight weight(mem, static_cast<size_t>(rows) * cols, 4);
    bf16* w = weight.data();
    w[5] = bf16(0.0f);
    ASSERT_NE(copies.get(w, rows, cols, true), nullptr);
    w[5] = bf16(-0.0f);
    w[rows * cols - 1] = bf16(7.0f);
    for (bool bt : {true, false, true}) {
        const bf16* got = copies.get(w, rows, cols, bt);
        ASSERT_NE(got, nullptr);
        const int K = bt ? cols : rows, N = bt ? rows : cols;
        std::vector<bf16> want(cpu::packed_b_size(K, N));
        cpu::pack_b_rows(want.data(), w, bt, K, N, 0, rows);
        EXPECT_EQ(std::memcmp(got, want.data(), want.size() * sizeof(bf16)), 0) << "b_trans " << bt;
        w[rows * cols / 3] = bf16(float(w[rows * cols / 3]) - 1.0f);  // changed before the next use
    }
}

// A use repacks only the blocks of rows (one panel width of rows at a time here) whose bits
// changed: none when the weight is as it was, in either role, and one block for one element
// written.
TEST(CpuWeightCopies, OnlyChangedRowsAreRepacked) {
    HostMemory mem;
    cpu::WeightCopies copies(mem);
    const int block = cpu::kPanelWidth;  // blocks of 4096 values, rounded up to whole panels
    for (int cols : {256, 250}) {  // whole panels, and a partial last one (blocks of `block` rows both)
        const int rows = 100;
        Weight weight(mem, static_cast<size_t>(rows) * cols, 12);
        bf16* w = weight.data();
        const size_t before = copies.rows_repacked();
        ASSERT_NE(copies.get(w, rows, cols, true), nullptr);
        EXPECT_EQ(copies.rows_repacked() - before, static_cast<size_t>(rows)) << cols;
        ASSERT_NE(copies.get(w, rows, cols, false), nullptr);
        ASSERT_NE(copies.get(w, rows, cols, true), nullptr);
        EXPECT_EQ(copies.rows_repacked() - before, static_cast<size_t>(rows)) << "unchanged, " << cols;
        w[40 * cols + cols - 1] = bf16(float(w[40 * cols + cols - 1]) + 1.0f);  // row 40: one block
        ASSERT_NE(copies.get(w, rows, cols, false), nullptr);
        EXPECT_EQ(copies.rows_repacked() - before, static_cast<size_t>(rows + block)) << "one element, " << cols;
    }
}

// Each role's panels in MemCategory::weight_copies; once the budget is full no further weight or
// role is kept (those already kept stay, and stay right); the W role costs nothing more once the
// weight is kept (its panels are the record); nothing outside parameter memory is kept; all
// returned when the copies go.
TEST(CpuWeightCopies, LedgerBudgetAndParameterMemoryOnly) {
    HostMemory mem;
    const int rows = 40, cols = 25;
    const size_t n = size_t(rows) * cols;
    const size_t one = copy_bytes(rows, cols, true);
    Weight w1(mem, n, 5), w2(mem, n, 6), w3(mem, n, 7);
    {
        cpu::WeightCopies copies(mem, 2 * one);
        ASSERT_NE(copies.get(w1.data(), rows, cols, true), nullptr);
        ASSERT_NE(copies.get(w2.data(), rows, cols, true), nullptr);
        EXPECT_EQ(copies.get(w3.data(), rows, cols, true), nullptr);
        EXPECT_NE(copies.get(w1.data(), rows, cols, false), nullptr);  // the W role: already kept
        EXPECT_EQ(copies.bytes(), 2 * one);
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), 2 * one);
        w1.data()[n - 1] = bf16(float(w1.data()[n - 1]) + 1.0f);
        const bf16* p1 = copies.get(w1.data(), rows, cols, true);
        ASSERT_NE(p1, nullptr);
        // Row 39 of the weight is column 39 % w of panel 39 / w (w^T: K = cols), at depth cols - 1,
        // in bf16_panel_lane's place (16 wide: column 7 of panel 2, at lane 11).
        const int pw = cpu::kPanelWidth;
        EXPECT_EQ(p1[(static_cast<size_t>(39 / pw) * cols + (cols - 1)) * pw + cpu::bf16_panel_lane(39 % pw)].bits,
                  w1.data()[n - 1].bits);
        EXPECT_EQ(copies.get(w1.data(), rows / 2, cols, true), nullptr);  // another shape at the same address: another weight
    }
    EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), 0u);
    cpu::WeightCopies copies(mem);
    DeviceBuffer scratch(&mem, n * sizeof(bf16), MemCategory::workspace);
    std::vector<bf16> host = bf16_values(n, 8);
    std::copy(host.begin(), host.end(), scratch.as<bf16>());
    EXPECT_EQ(copies.get(scratch.as<bf16>(), rows, cols, true), nullptr);
    EXPECT_EQ(copies.get(host.data(), rows, cols, true), nullptr);
    EXPECT_EQ(copies.get(w1.data() + cols, rows, cols, true), nullptr);  // runs past the end of w1's allocation
    EXPECT_NE(copies.get(w1.data() + cols, rows - 1, cols, false), nullptr);
    EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), copy_bytes(rows - 1, cols, false));
    EXPECT_NE(copies.get(w1.data() + cols, rows - 1, cols, true), nullptr);
    EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), copy_bytes(rows - 1, cols, true));
}

// The op set keeps copies only where bf16 runs in FP32 (the packed GEMM): the native path (or
// FP32) holds none. A forward keeps both roles' panels (its own and the W panels, the record);
// its backward uses the W panels and adds nothing.
TEST(CpuWeightCopies, OnlyThePackedPathKeepsCopies) {
    const int N = 16, C = 32, OC = 48;
    for (cpu::Bf16Math math : {cpu::Bf16Math::fp32, cpu::Bf16Math::native}) {
        HostMemory mem;
        auto ops = make_cpu_ops(DType::bf16, mem, math);
        XBuf inp(DType::bf16, random_floats(static_cast<size_t>(N) * C, 9)), out(DType::bf16, static_cast<size_t>(N) * OC);
        XBuf dout(DType::bf16, random_floats(static_cast<size_t>(N) * OC, 12)), dinp(DType::bf16, static_cast<size_t>(N) * C);
        XBuf dw(DType::bf16, static_cast<size_t>(OC) * C);
        Weight w(mem, size_t(OC) * C, 10);
#ifdef SIXND_HAVE_ONEDNN
        const bool packed = math == cpu::Bf16Math::fp32;
#else
        const bool packed = true;  // the packed GEMM is the whole matmul there
#endif
        ops->matmul_forward(out.ptr(), nullptr, inp.ptr(), w.data(), nullptr, N, C, OC);
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), packed ? copy_bytes(OC, C, true) : 0u);
        ops->matmul_backward(dinp.ptr(), dw.ptr(), nullptr, dout.ptr(), inp.ptr(), w.data(), N, C, OC);
        EXPECT_EQ(mem.ledger().current(MemCategory::weight_copies), packed ? copy_bytes(OC, C, true) : 0u);
    }
}
