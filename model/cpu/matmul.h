// The small CPU matmul interface every Linear goes through:
//   c[M,N] (= or +=) op(a) @ op(b) (+ bias[N])
// a is [M,K] row-major, or stored [K,M] when a_trans; b is [K,N] row-major, or stored [N,K]
// when b_trans (a Linear weight [OC,C] used as W^T). Inputs, bias and c are all of the storage
// type; accumulation is FP32, and with `accumulate` the old c is added before the single final
// rounding, so bf16 gradients accumulate without an extra rounding per product.
// BF16 arithmetic: oneDNN's BF16 kernels where the CPU has BF16 dot products (AVX512-BF16, AMX);
// elsewhere sixnd's packed GEMM (gemm_packed.h), which widens bf16 to FP32 as it packs the
// operands and rounds the result once in its epilogue. There a weight operand
// (GemmShape::b_weight) is not packed per call: its packed bf16 panels are kept and checked
// against the weight on each use (weight_copies.h), so they are never stale.
// FP32 products whose a is stored transposed (the weight gradients, summed over the tokens) run
// on the packed GEMM too: oneDNN splits that sum between threads, the packed GEMM's bits do not
// depend on the thread count.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/memory.h"

namespace sixnd::cpu {

class WeightCopies;

struct GemmShape {
    int M = 0, N = 0, K = 0;
    bool a_trans = false;
    bool b_trans = false;
    bool accumulate = false;
    // b is a Linear's weight, unchanged between most calls: where bf16 runs in FP32, its packed
    // panels are kept between calls (WeightCopies) instead of being packed on each one.
    bool b_weight = false;
};

// The arithmetic of a bf16 Matmul: `automatic` picks `native` where the CPU's BF16 dot products
// are faster than its FP32 FMAs (cpu_features().bf16_matmul_native()), else `fp32`. Tests force
// each.
enum class Bf16Math { automatic, native, fp32 };

class Matmul {
public:
    // copies_mem: where the packed panels of weights are kept on the FP32 path of bf16 (in its
    // ledger); null keeps none (every operand is packed per call).
    explicit Matmul(DType dtype, Bf16Math math = Bf16Math::automatic, MemoryBackend* copies_mem = nullptr);
    ~Matmul();
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;

    // gelu_out: also gelu_out = gelu(c) elementwise, c as rounded (what gelu_forward(gelu_out, c)
    // after the product gives); the packed GEMM does it in its epilogue, with c still in registers.
    void run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s, void* gelu_out = nullptr);
    // "oneDNN" or "portable": which engine run() uses in this build.
    static const char* engine();
    // What a bf16 run() computes in: "bf16" (native kernels) or "fp32" (the packed GEMM).
    const char* bf16_math() const { return widen_ ? "fp32" : "bf16"; }
    // The instruction set oneDNN dispatches to after SIXND_CPU_ISA's cap ("avx2",
    // "avx512_core_bf16", ...), or "none" without oneDNN. Applies the cap if nothing has yet.
    static std::string engine_isa();

private:
    void run_packed(void* c, const void* a, const void* b, const void* bias, const GemmShape& s, void* gelu_out);
    struct Impl;  // oneDNN engine, stream and one cached primitive per shape
    DType dtype_;
    bool widen_ = false;  // bf16 through FP32 arithmetic (the packed GEMM)
    std::unique_ptr<WeightCopies> copies_;  // packed weights for the packed GEMM, if kept
    std::unique_ptr<Impl> impl_;
};

}  // namespace sixnd::cpu
