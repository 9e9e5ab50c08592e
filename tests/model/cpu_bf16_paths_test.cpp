// The whole tiny model in BF16 on both matmul paths — oneDNN's native BF16 kernels and the
// packed GEMM (bf16 widened as it is packed, FP32 products, one rounding) that CPUs without
// BF16 dot products run — forced in one process, each against the FP32 model with the BF16
// tolerances of tests/model/gpt_test.cpp (loss within 1%, gradients within 5%), and the two
// paths against each other. The native path is checked only where the CPU has BF16 dot products.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/cpu_features.h"
#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/gpt.h"
#include "model/init.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

constexpr int B = 2, T = 11;

struct RunResult {
    float loss;
    std::vector<float> grads;
};

RunResult run_model(DType dt, cpu::Bf16Math math, const std::vector<int32_t>& tok) {
    const GPTConfig c = preset_config("tiny");
    HostMemory mem;
    auto ops = make_cpu_ops(dt, mem, math);
    GPT m(c, *ops, ModelOptions{});
    m.set_params(gpt2_init(m.layout(), c, 42));
    m.zero_grad();
    const float loss = m.forward(tok.data(), tok.data() + 1, B, T, true);
    m.backward();
    return {loss, m.get_grads()};
}

}  // namespace

TEST(CpuBf16Paths, NativeAndPackedTrackFp32) {
    const GPTConfig c = preset_config("tiny");
    const auto tok = test::random_ints(static_cast<size_t>(B) * T + 1, 4, 0, c.vocab_size);
    const RunResult f32 = run_model(DType::f32, cpu::Bf16Math::automatic, tok);
    const RunResult packed = run_model(DType::bf16, cpu::Bf16Math::fp32, tok);
    EXPECT_NEAR(packed.loss, f32.loss, 1e-2 * f32.loss);
    EXPECT_LT(test::rel_error(packed.grads, f32.grads), 5e-2);
    if (!cpu_features().native_bf16()) {
        std::printf("native bf16 path not checked: this CPU (%s) has no BF16 dot products\n",
                    cpu_features().flags().c_str());
        return;
    }
    const RunResult native = run_model(DType::bf16, cpu::Bf16Math::native, tok);
    EXPECT_NEAR(native.loss, f32.loss, 1e-2 * f32.loss);
    EXPECT_LT(test::rel_error(native.grads, f32.grads), 5e-2);
    EXPECT_LT(test::rel_error(packed.grads, native.grads), 5e-2);
}
