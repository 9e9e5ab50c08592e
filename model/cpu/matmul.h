// The small CPU matmul interface every Linear goes through:
//   c[M,N] (= or +=) op(a) @ op(b) (+ bias[N])
// a is [M,K] row-major, or stored [K,M] when a_trans; b is [K,N] row-major, or stored [N,K]
// when b_trans (a Linear weight [OC,C] used as W^T). Inputs, bias and c are all of the storage
// type; accumulation is FP32, and with `accumulate` the old c is added before the single final
// rounding, so bf16 gradients accumulate without an extra rounding per product.
#pragma once
#include <memory>

#include "core/dtype.h"

namespace sixnd::cpu {

struct GemmShape {
    int M = 0, N = 0, K = 0;
    bool a_trans = false;
    bool b_trans = false;
    bool accumulate = false;
};

// The blocked OpenMP GEMM: the whole CPU matmul in builds without oneDNN, and the independent
// cross-check of oneDNN in the tests of builds with it.
void gemm_portable(DType dtype, void* c, const void* a, const void* b, const void* bias, const GemmShape& s);

class Matmul {
public:
    explicit Matmul(DType dtype);
    ~Matmul();
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;

    void run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s);
    // "oneDNN" or "portable": which engine run() uses in this build.
    static const char* engine();

private:
    struct Impl;  // oneDNN engine, stream and one cached primitive per shape
    DType dtype_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sixnd::cpu
