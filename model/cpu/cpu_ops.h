// The CPU implementation of the op set (model/ops.h): OpenMP kernels, and matmuls through
// oneDNN when the build has it (a blocked portable GEMM otherwise).
#pragma once
#include <memory>

#include "model/ops.h"

namespace sixnd {

// mem must be host memory (the ops read and write its pointers directly).
std::unique_ptr<Ops> make_cpu_ops(DType dtype, MemoryBackend& mem);

}  // namespace sixnd
