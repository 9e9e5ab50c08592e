// The small CPU matmul interface every Linear goes through:
//   c[M,N] (= or +=) op(a) @ op(b) (+ bias[N])
// a is [M,K] row-major, or stored [K,M] when a_trans; b is [K,N] row-major, or stored [N,K]
// when b_trans (a Linear weight [OC,C] used as W^T). Inputs, bias and c are all of the storage
// type; accumulation is FP32, and with `accumulate` the old c is added before the single final
// rounding, so bf16 gradients accumulate without an extra rounding per product.
// BF16 arithmetic: oneDNN's BF16 kernels where the CPU has BF16 dot products (AVX512-BF16, AMX);
// elsewhere the operands are widened to FP32 (O(MK + KN) against the product's O(MNK)), oneDNN's
// FP32 kernels do the product and the result is rounded once — instead of a slow generic loop.
// A weight operand (GemmShape::b_weight) is not widened per call but kept as an FP32 copy that
// is checked against the weight on each use (weight_copies.h): same inputs, same bits.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/memory.h"

namespace sixnd::cpu {

struct GemmShape {
    int M = 0, N = 0, K = 0;
    bool a_trans = false;
    bool b_trans = false;
    bool accumulate = false;
    // b is a Linear's weight, unchanged between most calls: where bf16 runs widened, its FP32
    // copy is kept between calls (WeightCopies) instead of being widened on each one.
    bool b_weight = false;
    // a is the previous call's a, unchanged since (a Linear's backward multiplies dout twice, the
    // second time transposed): where bf16 runs widened and the previous call widened all of it,
    // that FP32 copy is used again.
    bool a_again = false;
};

// The blocked OpenMP GEMM: the whole CPU matmul in builds without oneDNN, and the independent
// cross-check of oneDNN in the tests of builds with it.
void gemm_portable(DType dtype, void* c, const void* a, const void* b, const void* bias, const GemmShape& s);

// The arithmetic of a bf16 Matmul: `automatic` picks `native` when the CPU has BF16 dot
// products (cpu_features().native_bf16()), else `fp32`. Tests force each.
enum class Bf16Math { automatic, native, fp32 };

// FP32 floats the widened operands and result of one chunk of a bf16 product may take (32 MiB).
constexpr size_t kWidenBudget = size_t(8) << 20;

class Matmul {
public:
    // widen_budget: kWidenBudget; tests pass a small one to exercise the chunking.
    // copies_mem: where the FP32 copies of weights are kept on the widened path (in its ledger);
    // null keeps none (every operand is widened per call).
    explicit Matmul(DType dtype, Bf16Math math = Bf16Math::automatic, size_t widen_budget = kWidenBudget,
                    MemoryBackend* copies_mem = nullptr);
    ~Matmul();
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;

    void run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s);
    // "oneDNN" or "portable": which engine run() uses in this build.
    static const char* engine();
    // What a bf16 run() computes in: "bf16" (native kernels) or "fp32" (widened operands).
    const char* bf16_math() const { return widen_ ? "fp32" : "bf16"; }
    // The instruction set oneDNN dispatches to after SIXND_CPU_ISA's cap ("avx2",
    // "avx512_core_bf16", ...), or "none" without oneDNN. Applies the cap if nothing has yet.
    static std::string engine_isa();

private:
    struct Impl;  // oneDNN engine, stream and one cached primitive per shape
    DType dtype_;
    bool widen_ = false;  // bf16 through FP32 kernels
    size_t widen_budget_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sixnd::cpu
