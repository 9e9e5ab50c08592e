// The peak FLOP/s that MFU is measured against: the --peak-tflops override, else the device's
// figure from the table: dense BF16 (never a sparsity figure), or for --dtype fp32 plain FP32,
// since its GEMMs do not use TF32; else — CPUs — a peak computed from the CPU's features
// (cpu_peak below). On the CPU the measured matmul ceiling is reported beside it as
// "achievable"; it is the peak only where the features give none (an unknown clock, or an
// unknown device).
#pragma once
#include <string>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "model/backend.h"

namespace sixnd {

struct PeakFlops {
    double flops_per_s = 0;
    std::string source;   // how flops_per_s was found, in full
    std::string against;  // what MFU is against, for the progress line: "cpu bf16 peak", ...
    double achievable = 0;          // CPU: the measured matmul ceiling (0: not measured)
    std::string achievable_source;  // "measured matmul ceiling (bf16, 512x1024x1024)"
    // Set where the computed CPU peak is below the measured ceiling (the clock it was computed at
    // is a base or nominal one, and the cores run faster): MFU then reads high, and this says so.
    std::string note;
};

struct CpuPeak {
    double flops_per_s = 0;  // 0: the clock is not known
    std::string source;
};

// FLOP/cycle/core × cores × clock. FP32: vector lanes (16 with AVX-512, 8 with AVX/AVX2, 4
// otherwise; 8 for AVX-512 on AMD Zen 4, which runs it on 256-bit units, and 4 on Zen/Zen+'s
// 128-bit ones) × 2 FMA units (Intel since Haswell, AMD since Zen; a 1-unit Xeon Bronze/Silver
// reads half this peak, which the source string says is assumed) × 2 FLOPs per FMA. BF16: AMX
// 1024 FLOP/cycle/core, AVX512-BF16 twice FP32 (two products per lane), otherwise FP32's figure
// (the arithmetic runs in FP32). own_lanes: where sixnd's packed GEMM runs the products
// (own_gemm_lanes), the lanes it was compiled for replace the features' (a build for AVX-512 run
// under SIXND_CPU_ISA=avx2 multiplies BF16 in 16 lanes; one for AVX2 on an AVX-512 CPU in 8).
// Pure arithmetic on its arguments: no timing.
CpuPeak cpu_peak(const CpuFeatures& f, DType dtype, int cores, int own_lanes = 0);

PeakFlops peak_flops(Backend& be, double override_tflops);

// The cores one process's CPU peak counts: its threads, at most its share of the node's physical
// cores — mpirun's ranks on one node split them, and a hyperthread adds no FMA units (4 threads
// per rank of 2 ranks on 4 cores with 8 hardware threads are 2 cores each, not 4). At least 1.
int peak_cores(int physical_cores, int threads, int processes_here);

// Sets p.achievable and p.achievable_source: the measured matmul ceiling (timed at once).
void measure_achievable(Backend& be, PeakFlops& p);

// The note above for a computed peak and a measured ceiling; empty when the peak is not below it.
std::string peak_below_ceiling_note(const CpuPeak& peak, const CpuFeatures& f, double achievable);

}  // namespace sixnd
