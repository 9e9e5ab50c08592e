// The profiling decorator times through the backend's clock and reads the times back only when
// asked (the CUDA clock's events are resolved once per read, not once per op): calls, FLOPs and
// bytes are booked at once; seconds arrive at seconds()/stats(), after one resolve, each op
// getting the span between its own two marks; nothing is marked while disabled.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/profiling_ops.h"

using namespace sixnd;

namespace {

// Mark i sits at time i*i ms, so every span has a different length; reading a span before
// resolve() is an error, as reading an unfinished CUDA event is.
class FakeClock final : public OpClock {
public:
    int marks = 0, resolves = 0, resolved_upto = 0;
    int mark() override { return marks++; }
    void resolve() override {
        resolves++;
        resolved_upto = marks;
    }
    double seconds(int a, int b) const override {
        if (b >= resolved_upto) throw std::logic_error("span read before resolve");
        return (double(b) * b - double(a) * a) * 1e-3;
    }
    void clear() override {}
};

}  // namespace

TEST(ProfilingOps, TimesAreReadBackOncePerRead) {
    HostMemory mem;
    auto clock = std::make_unique<FakeClock>();
    FakeClock* c = clock.get();
    ProfilingOps ops(make_cpu_ops(DType::f32, mem), std::move(clock));
    std::vector<float> a(64, 1.0f), b(64, 2.0f), out(64);

    ops.residual_forward(out.data(), a.data(), b.data(), a.size());
    EXPECT_EQ(c->marks, 0) << "marked while disabled";
    EXPECT_TRUE(ops.stats().empty());

    ops.set_enabled(true);
    ops.residual_forward(out.data(), a.data(), b.data(), a.size());  // marks 0, 1
    ops.gelu_forward(out.data(), a.data(), a.size());                // marks 2, 3
    ops.residual_forward(out.data(), a.data(), b.data(), a.size());  // marks 4, 5
    EXPECT_EQ(out[0], 3.0f);
    EXPECT_EQ(c->marks, 6);
    EXPECT_EQ(c->resolves, 0) << "the device was waited for op by op";

    const double total = ops.seconds();
    EXPECT_EQ(c->resolves, 1);
    EXPECT_DOUBLE_EQ(total, (1 + (9 - 4) + (25 - 16)) * 1e-3);
    const auto& st = ops.stats();
    EXPECT_EQ(c->resolves, 1) << "nothing new to read, no second wait";
    ASSERT_EQ(st.size(), 2u);
    const OpStats& res = st.at("residual_forward n=64");
    EXPECT_EQ(res.calls, 2);
    EXPECT_DOUBLE_EQ(res.seconds, (1 + 9) * 1e-3);
    EXPECT_DOUBLE_EQ(res.flops, 2 * 64.0);
    EXPECT_DOUBLE_EQ(st.at("gelu_forward n=64").seconds, 5e-3);

    ops.set_enabled(false);
    ops.reset();
    EXPECT_TRUE(ops.stats().empty());
    EXPECT_EQ(ops.seconds(), 0);
}
