// The flash kernel against the naive (cuBLASLt + softmax) attention on the same device, bf16:
// output, the per-row max logit and every gradient, for head sizes 64 and 128, T not a
// multiple of the 64-row tiles, several batch and head counts (B*NH, and B*NKV for the dK/dV
// kernel, past gridDim.y's 65535, which the kernels fold into gridDim.z:
// model/cuda/flash_grid.h; the naive side's batched GEMMs then run in chunks), multi-head, grouped-query and multi-query (NKV = NH, NH/2.., 1);
// the log-sum-exp is checked through the gradients and against row_max (0 <= lse - max <=
// log(t+1)); the deterministic backward is bitwise repeatable and the atomic one agrees with it.
// Outputs are poisoned with NaN first, so an unwritten element fails. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>

#include "model/cuda/cuda_ops.h"
#include "tests/gpu/gpu_harness.h"

namespace sixnd::test {
namespace {

struct Shape {
    int B, T, NH, hs, NKV;
};

std::string shape_name(const Shape& s) {
    return "B" + std::to_string(s.B) + "_T" + std::to_string(s.T) + "_NH" + std::to_string(s.NH) + "_NKV" +
           std::to_string(s.NKV) + "_hs" + std::to_string(s.hs);
}

class FlashVsNaive : public ::testing::TestWithParam<Shape> {};

void upload(MemoryBackend& mem, DeviceBuffer& buf, const std::vector<float>& v) {
    std::vector<bf16> b = to_bf16(v);
    mem.copy_to_device(buf.get(), b.data(), b.size() * 2);
}
std::vector<float> download_bf16(MemoryBackend& mem, const DeviceBuffer& buf) {
    std::vector<bf16> b(buf.bytes() / 2);
    mem.copy_to_host(b.data(), buf.get(), buf.bytes());
    return from_bf16(b);
}
std::vector<float> download_f32(MemoryBackend& mem, const DeviceBuffer& buf) {
    std::vector<float> v(buf.bytes() / 4);
    mem.copy_to_host(v.data(), buf.get(), buf.bytes());
    return v;
}
bool all_finite(const std::vector<float>& v) {
    for (float x : v)
        if (!std::isfinite(x)) return false;
    return true;
}

TEST_P(FlashVsNaive, OutputAndGradients) {
    SIXND_SKIP_WITHOUT_CUDA();
    const Shape sh = GetParam();
    const int B = sh.B, T = sh.T, NH = sh.NH, NKV = sh.NKV, C = NH * sh.hs;
    auto mem = make_cuda_memory(0);
    auto ops = make_cuda_ops(DType::bf16, *mem);
    CudaOpsOptions fast;
    fast.deterministic = false;
    auto fast_ops = make_cuda_ops(DType::bf16, *mem, fast);
    const size_t W = Ops::qkv_width(C, NH, NKV);
    const size_t nqkv = static_cast<size_t>(B) * T * W, nout = static_cast<size_t>(B) * T * C;
    const auto A = MemCategory::activations;
    DeviceBuffer qkv(mem.get(), nqkv * 2, A), dout(mem.get(), nout * 2, A);
    DeviceBuffer out_n(mem.get(), nout * 2, A), out_f(mem.get(), nout * 2, A);
    DeviceBuffer dqkv_n(mem.get(), nqkv * 2, A), dqkv_f(mem.get(), nqkv * 2, A), dqkv_a(mem.get(), nqkv * 2, A);
    DeviceBuffer probs(mem.get(), 4 * Ops::attention_stats_floats(AttentionKind::naive, B, T, NH), A);
    DeviceBuffer lse(mem.get(), 4 * Ops::attention_stats_floats(AttentionKind::flash, B, T, NH), A);
    const size_t rows = static_cast<size_t>(B) * NH * T;
    DeviceBuffer max_n(mem.get(), 4 * rows, A), max_f(mem.get(), 4 * rows, A);
    uint64_t seed = 4242 + static_cast<uint64_t>(T) * 31 + B;
    upload(*mem, qkv, random_floats(nqkv, seed, -2.0f, 2.0f));
    upload(*mem, dout, random_floats(nout, seed + 1));
    for (DeviceBuffer* b : {&out_f, &lse, &max_n, &max_f, &dqkv_f, &dqkv_a}) mem->memset(b->get(), 0xff, b->bytes());

    ops->attention_forward(AttentionKind::naive, out_n.get(), probs.as<float>(), max_n.as<float>(), qkv.get(), B, T, C,
                           NH, NKV);
    ops->attention_forward(AttentionKind::flash, out_f.get(), lse.as<float>(), max_f.as<float>(), qkv.get(), B, T, C,
                           NH, NKV);
    ops->attention_backward(AttentionKind::naive, dqkv_n.get(), dout.get(), qkv.get(), out_n.get(), probs.as<float>(),
                            B, T, C, NH, NKV);
    ops->attention_backward(AttentionKind::flash, dqkv_f.get(), dout.get(), qkv.get(), out_f.get(), lse.as<float>(), B,
                            T, C, NH, NKV);
    fast_ops->attention_backward(AttentionKind::flash, dqkv_a.get(), dout.get(), qkv.get(), out_f.get(),
                                 lse.as<float>(), B, T, C, NH, NKV);
    mem->sync();

    auto on = download_bf16(*mem, out_n), of = download_bf16(*mem, out_f);
    ASSERT_TRUE(all_finite(of)) << "flash left output elements unwritten";
    EXPECT_LE(rel_error(of, on), 1e-2) << "output";

    // lse is checked through the gradients, which need it right in every row, and here against
    // the row's max logit: the softmax sum over t+1 keys lies in [1, t+1].
    auto lf = download_f32(*mem, lse);
    ASSERT_TRUE(all_finite(lf)) << "flash left lse elements unwritten";
    auto mn = download_f32(*mem, max_n), mf = download_f32(*mem, max_f);
    ASSERT_TRUE(all_finite(mf)) << "flash left row_max elements unwritten";
    ASSERT_TRUE(all_finite(mn)) << "naive left row_max elements unwritten";
    EXPECT_LE(rel_error(mf, mn), 1e-3) << "row_max";
    int bad = 0;
    for (size_t r = 0; r < lf.size(); r++) {
        const double gap = static_cast<double>(lf[r]) - mf[r], t = static_cast<double>(r % T);
        if (gap < -1e-4 || gap > std::log(t + 1) + 1e-3) bad++;
    }
    EXPECT_EQ(bad, 0) << "rows whose lse - row_max is outside [0, log(t+1)]";

    auto gn = download_bf16(*mem, dqkv_n), gf = download_bf16(*mem, dqkv_f), ga = download_bf16(*mem, dqkv_a);
    ASSERT_TRUE(all_finite(gf)) << "deterministic flash backward left gradient elements unwritten";
    ASSERT_TRUE(all_finite(ga)) << "atomic flash backward left gradient elements unwritten";
    // Each of dq, dk, dv separately, so one wrong part cannot hide behind the others.
    const char* names[3] = {"dq", "dk", "dv"};
    for (int part = 0; part < 3; part++) {
        std::vector<float> a, b, c;
        const size_t begin = part == 0 ? 0 : C + (part - 1) * NKV * sh.hs, width = part == 0 ? C : NKV * sh.hs;
        for (size_t row = 0; row < static_cast<size_t>(B) * T; row++)
            for (size_t i = 0; i < width; i++) {
                size_t k = row * W + begin + i;
                a.push_back(gf[k]);
                b.push_back(gn[k]);
                c.push_back(ga[k]);
            }
        EXPECT_LE(rel_error(a, b), 1e-2) << names[part] << " deterministic flash vs naive";
        EXPECT_LE(rel_error(c, b), 1e-2) << names[part] << " atomic flash vs naive";
    }

    // Deterministic mode: the same bits again.
    DeviceBuffer again(mem.get(), nqkv * 2, A);
    ops->attention_backward(AttentionKind::flash, again.get(), dout.get(), qkv.get(), out_f.get(), lse.as<float>(), B,
                            T, C, NH, NKV);
    EXPECT_EQ(download_bf16(*mem, again), gf) << "deterministic flash backward is not bitwise repeatable";
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashVsNaive,
                         ::testing::Values(Shape{1, 64, 1, 64, 1}, Shape{2, 100, 3, 64, 3}, Shape{1, 257, 2, 64, 2},
                                           Shape{3, 130, 4, 128, 4}, Shape{1, 1, 2, 128, 2}, Shape{2, 200, 1, 128, 1},
                                           Shape{1, 1000, 2, 64, 2}, Shape{35000, 3, 2, 64, 2},
                                           // grouped-query and multi-query
                                           Shape{2, 100, 4, 64, 2}, Shape{1, 257, 8, 64, 2}, Shape{3, 130, 4, 128, 1},
                                           Shape{2, 200, 6, 128, 3}, Shape{1, 1, 4, 64, 1}, Shape{1, 1000, 4, 64, 1},
                                           Shape{70000, 3, 2, 64, 1}),
                         [](const ::testing::TestParamInfo<Shape>& i) { return shape_name(i.param); });

}  // namespace
}  // namespace sixnd::test
