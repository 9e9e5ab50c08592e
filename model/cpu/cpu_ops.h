// The CPU implementation of the op set (model/ops.h): OpenMP kernels, and matmuls through
// oneDNN when the build has it (a blocked portable GEMM otherwise).
#pragma once
#include <memory>

#include <nlohmann/json.hpp>

#include "model/cpu/matmul.h"
#include "model/ops.h"

namespace sixnd {

// mem must be host memory (the ops read and write its pointers directly). bf16_math: what bf16
// matmuls compute in (automatic: natively where the CPU has BF16 dot products, else in FP32 on
// the packed GEMM); tests force each.
std::unique_ptr<Ops> make_cpu_ops(DType dtype, MemoryBackend& mem, cpu::Bf16Math bf16_math = cpu::Bf16Math::automatic);

// The host CPU as the CPU ops see it, for run-log headers and benchmarks: cpu_features()
// (after SIXND_CPU_ISA), the matmul engine, the ISA oneDNN dispatches to, what BF16 matmuls
// compute in ("bf16" natively, "fp32" on the packed GEMM) and the ISA sixnd's own kernels were compiled for.
nlohmann::json cpu_host_json();

// The FP32 lanes of the vectors sixnd's packed GEMM multiplies in, where that GEMM runs dtype's
// matmuls (BF16 without BF16 dot products; every product in a build without oneDNN), else 0
// (oneDNN runs them). The build's -march sets them: 16 with AVX-512, 8 with AVX2, 4 otherwise;
// SIXND_CPU_ISA caps the features and oneDNN, never code already compiled.
int own_gemm_lanes(DType dtype);

}  // namespace sixnd
