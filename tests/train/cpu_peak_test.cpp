// The CPU peak MFU is measured against: computed from the CPU's features (no timing), so two
// detections give the same bits and the same source string; the formula per ISA on synthetic
// features; and the trainer's peak on a CPU backend is that peak, with the measured matmul
// ceiling beside it as "achievable".
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>

#include "core/cpu_features.h"
#include "model/backend.h"
#include "train/peak_flops.h"

using namespace sixnd;

namespace {

CpuFeatures synthetic(const std::string& vendor, int family, bool avx512, bool bf16, bool amx) {
    CpuFeatures f;
    f.vendor = vendor;
    f.family = family;
    f.model = 0x31;
    f.avx2 = f.fma = true;
    f.avx512f = avx512;
    f.avx512_bf16 = bf16;
    f.amx_bf16 = amx;
    f.clock_ghz = 2.3;
    f.clock_source = "model name";
    return f;
}

}  // namespace

TEST(CpuPeak, IdenticalAcrossTwoDetections) {
    const CpuFeatures a = detect_cpu_features(), b = detect_cpu_features();
    EXPECT_EQ(a.to_json(), b.to_json());
    EXPECT_EQ(a.to_json(), cpu_features().to_json());
    for (DType dt : {DType::f32, DType::bf16}) {
        const CpuPeak pa = cpu_peak(a, dt, a.physical_cores), pb = cpu_peak(b, dt, b.physical_cores);
        EXPECT_EQ(pa.flops_per_s, pb.flops_per_s);  // exact: arithmetic on the same inputs
        EXPECT_EQ(pa.source, pb.source);
        if (a.clock_ghz > 0) {
            EXPECT_GT(pa.flops_per_s, 0);
            EXPECT_NE(pa.source.find(a.clock_source), std::string::npos) << pa.source;
        }
    }
}

TEST(CpuPeak, FormulaPerInstructionSet) {
    // AVX2 + FMA: 8 lanes x 2 units x 2 FLOP x 2 cores x 2.3 GHz; bf16 runs in fp32, same peak.
    const CpuFeatures avx2 = synthetic("AuthenticAMD", 0x19, false, false, false);
    EXPECT_DOUBLE_EQ(cpu_peak(avx2, DType::f32, 2).flops_per_s, 8 * 2 * 2 * 2 * 2.3e9);
    EXPECT_DOUBLE_EQ(cpu_peak(avx2, DType::bf16, 2).flops_per_s, 8 * 2 * 2 * 2 * 2.3e9);
    EXPECT_NE(cpu_peak(avx2, DType::bf16, 2).source.find("bf16 runs in fp32"), std::string::npos);
    // AVX-512 + AVX512-BF16 on an Intel core: 16 lanes; bf16 dot products double it.
    const CpuFeatures spr = synthetic("GenuineIntel", 6, true, true, false);
    EXPECT_DOUBLE_EQ(cpu_peak(spr, DType::f32, 4).flops_per_s, 16 * 2 * 2 * 4 * 2.3e9);
    EXPECT_DOUBLE_EQ(cpu_peak(spr, DType::bf16, 4).flops_per_s, 2 * 16 * 2 * 2 * 4 * 2.3e9);
    // AMX: 1024 bf16 FLOP/cycle/core.
    const CpuFeatures amx = synthetic("GenuineIntel", 6, true, true, true);
    EXPECT_DOUBLE_EQ(cpu_peak(amx, DType::bf16, 1).flops_per_s, 1024 * 2.3e9);
    // Zen 4 runs AVX-512 on 256-bit units.
    const CpuFeatures zen4 = synthetic("AuthenticAMD", 0x19, true, true, false);
    EXPECT_DOUBLE_EQ(cpu_peak(zen4, DType::f32, 1).flops_per_s, 8 * 2 * 2 * 2.3e9);
    // No clock, no peak (the trainer then uses the measured ceiling, labelled as such).
    CpuFeatures unknown = avx2;
    unknown.clock_ghz = 0;
    EXPECT_EQ(cpu_peak(unknown, DType::f32, 2).flops_per_s, 0);
}

TEST(CpuPeak, TrainerPeakOnTheCpuIsTheComputedOne) {
    for (DType dt : {DType::f32, DType::bf16}) {
        Backend be = make_backend("cpu", dt);
        const PeakFlops p = peak_flops(be, 0), q = peak_flops(be, 0);
        EXPECT_GT(p.achievable, 0);
        EXPECT_NE(p.achievable_source.find("measured matmul ceiling"), std::string::npos);
        if (cpu_features().clock_ghz <= 0) continue;
        const int cores = std::min(cpu_features().physical_cores, omp_get_max_threads());
        EXPECT_EQ(p.flops_per_s, cpu_peak(cpu_features(), dt, cores).flops_per_s);
        EXPECT_EQ(p.flops_per_s, q.flops_per_s);  // timing moves the achievable figure, never the peak
        EXPECT_EQ(p.source, q.source);
        EXPECT_EQ(p.against, std::string("cpu ") + dtype_name(dt) + " peak");
    }
    Backend be = make_backend("cpu", DType::f32);
    EXPECT_EQ(peak_flops(be, 7).flops_per_s, 7e12);
    EXPECT_EQ(peak_flops(be, 7).against, "--peak-tflops");
}
