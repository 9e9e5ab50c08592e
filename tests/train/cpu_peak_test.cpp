// The CPU peak MFU is measured against: computed from the CPU's features (no timing), so two
// detections give the same bits and the same source string; the formula per ISA on synthetic
// features; and the trainer's peak on a CPU backend is that peak, with the measured matmul
// ceiling beside it as "achievable".
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>

#include "core/cpu_features.h"
#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
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
    // AVX-512 + AVX512-BF16 on an Intel core without AMX: 16 lanes; bf16 runs on the FP32 FMAs
    // (its dot products are the slower arithmetic there), so the same peak.
    const CpuFeatures spr = synthetic("GenuineIntel", 6, true, true, false);
    EXPECT_DOUBLE_EQ(cpu_peak(spr, DType::f32, 4).flops_per_s, 16 * 2 * 2 * 4 * 2.3e9);
    EXPECT_DOUBLE_EQ(cpu_peak(spr, DType::bf16, 4).flops_per_s, 16 * 2 * 2 * 4 * 2.3e9);
    EXPECT_NE(cpu_peak(spr, DType::bf16, 4).source.find("slower than its FP32 FMAs"), std::string::npos);
    // AMX: 1024 bf16 FLOP/cycle/core.
    const CpuFeatures amx = synthetic("GenuineIntel", 6, true, true, true);
    EXPECT_DOUBLE_EQ(cpu_peak(amx, DType::bf16, 1).flops_per_s, 1024 * 2.3e9);
    // Zen 4 runs AVX-512 on 256-bit units.
    const CpuFeatures zen4 = synthetic("AuthenticAMD", 0x19, true, true, false);
    EXPECT_DOUBLE_EQ(cpu_peak(zen4, DType::f32, 1).flops_per_s, 8 * 2 * 2 * 2.3e9);
    // Its AVX512-BF16 dot products do twice the FP32 work per cycle, and bf16 matmuls use them.
    EXPECT_DOUBLE_EQ(cpu_peak(zen4, DType::bf16, 1).flops_per_s, 2 * 8 * 2 * 2 * 2.3e9);
    // SIXND_BF16_MATMUL's choice as detection records it. fp32: the FP32 peak, saying why.
    CpuFeatures zen4_fp32 = zen4, amx_fp32 = amx;
    zen4_fp32.bf16_matmul_switch = amx_fp32.bf16_matmul_switch = "fp32";
    EXPECT_FALSE(zen4_fp32.bf16_matmul_native());
    EXPECT_FALSE(amx_fp32.bf16_matmul_native());
    EXPECT_DOUBLE_EQ(cpu_peak(zen4_fp32, DType::bf16, 1).flops_per_s, 8 * 2 * 2 * 2.3e9);
    EXPECT_DOUBLE_EQ(cpu_peak(amx_fp32, DType::bf16, 1).flops_per_s, 16 * 2 * 2 * 2.3e9);
    EXPECT_NE(cpu_peak(amx_fp32, DType::bf16, 1).source.find("SIXND_BF16_MATMUL=fp32"), std::string::npos);
    // bf16 on an Intel core without AMX: its dot products, with the FP32 FMA rate still the ceiling.
    CpuFeatures spr_bf16 = spr;
    spr_bf16.bf16_matmul_switch = "bf16";
    EXPECT_TRUE(spr_bf16.bf16_matmul_native());
    EXPECT_DOUBLE_EQ(cpu_peak(spr_bf16, DType::bf16, 4).flops_per_s, 16 * 2 * 2 * 4 * 2.3e9);
    EXPECT_NE(cpu_peak(spr_bf16, DType::bf16, 4).source.find("SIXND_BF16_MATMUL=bf16"), std::string::npos);
    // Where sixnd's packed GEMM runs the products, the lanes it was built for count, not the
    // features SIXND_CPU_ISA leaves: an AVX-512 build capped to AVX2 multiplies BF16 in 16 lanes
    // (8 on Zen 4's 256-bit units), an AVX2 build on an AVX-512 CPU in 8.
    const CpuFeatures intel_capped = synthetic("GenuineIntel", 6, false, false, false);
    const CpuPeak wide = cpu_peak(intel_capped, DType::bf16, 2, 16);
    EXPECT_DOUBLE_EQ(wide.flops_per_s, 16 * 2 * 2 * 2 * 2.3e9);
    EXPECT_NE(wide.source.find("AVX-512: the width sixnd's kernels were built for"), std::string::npos) << wide.source;
    EXPECT_DOUBLE_EQ(cpu_peak(avx2, DType::bf16, 1, 16).flops_per_s, 8 * 2 * 2 * 2.3e9);  // AMD family 0x19
    EXPECT_DOUBLE_EQ(cpu_peak(spr, DType::bf16, 4, 8).flops_per_s, 8 * 2 * 2 * 4 * 2.3e9);
    EXPECT_EQ(cpu_peak(spr, DType::f32, 4, 16).source, cpu_peak(spr, DType::f32, 4).source);
    // A build without oneDNN on a CPU whose BF16 dot products would run the products: its packed
    // GEMM runs them in FP32, so the FP32 rate (Zen 4: 8 lanes), not the dot products' twice that.
    const CpuPeak portable = cpu_peak(zen4, DType::bf16, 1, 16);
    EXPECT_DOUBLE_EQ(portable.flops_per_s, 8 * 2 * 2 * 2.3e9);
    EXPECT_NE(portable.source.find("no oneDNN"), std::string::npos) << portable.source;
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
        EXPECT_EQ(p.flops_per_s, cpu_peak(cpu_features(), dt, cores, own_gemm_lanes(dt)).flops_per_s);
        EXPECT_EQ(p.flops_per_s, q.flops_per_s);  // timing moves the achievable figure, never the peak
        EXPECT_EQ(p.source, q.source);
        EXPECT_EQ(p.against, std::string("cpu ") + dtype_name(dt) + " peak");
    }
    Backend be = make_backend("cpu", DType::f32);
    EXPECT_EQ(peak_flops(be, 7).flops_per_s, 7e12);
    EXPECT_EQ(peak_flops(be, 7).against, "--peak-tflops");
}

TEST(CpuPeak, ClockPrefersTheStatedMaximum) {
    ClockEvidence e;
    e.cpuinfo_mhz = "2596.140";
    e.model_name = "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz";
    e.sysfs_base_khz = 2000000;
    e.cpuid_base_mhz = 2000;
    CpuClock c = pick_clock(e);
    EXPECT_DOUBLE_EQ(c.ghz, 2.0);
    EXPECT_EQ(c.source, "cpuid leaf 0x16 base frequency");
    EXPECT_FALSE(c.is_max);
    e.sysfs_max_khz = 3200000;
    c = pick_clock(e);
    EXPECT_DOUBLE_EQ(c.ghz, 3.2);
    EXPECT_TRUE(c.is_max);
    e.cpuid_max_mhz = 3300;
    EXPECT_EQ(pick_clock(e).source, "cpuid leaf 0x16 maximum frequency");
    EXPECT_DOUBLE_EQ(pick_clock(e).ghz, 3.3);
    // A VM that states nothing but the nominal clock (AMD: no leaf 0x16, no cpufreq).
    ClockEvidence vm;
    vm.model_name = "AMD EPYC";
    vm.cpuinfo_mhz = "2596.140";
    c = pick_clock(vm);
    EXPECT_DOUBLE_EQ(c.ghz, 2.59614);
    EXPECT_EQ(c.source, "/proc/cpuinfo cpu MHz");
    EXPECT_FALSE(c.is_max);
    vm.model_name = "Intel(R) Xeon(R) CPU @ 2.30GHz";
    EXPECT_DOUBLE_EQ(pick_clock(vm).ghz, 2.3);
    EXPECT_EQ(pick_clock(ClockEvidence{}).ghz, 0);
}

TEST(CpuPeak, NoteWhenTheMeasuredCeilingIsAboveThePeak) {
    CpuFeatures f = synthetic("AuthenticAMD", 0x19, false, false, false);
    f.clock_source = "/proc/cpuinfo cpu MHz";
    const CpuPeak p = cpu_peak(f, DType::f32, 2);  // 147.2 GFLOP/s
    EXPECT_EQ(peak_below_ceiling_note(p, f, 0), "");
    EXPECT_EQ(peak_below_ceiling_note(p, f, p.flops_per_s), "");
    const std::string note = peak_below_ceiling_note(p, f, 1.25 * p.flops_per_s);
    EXPECT_NE(note.find("184.0 GFLOP/s"), std::string::npos) << note;
    EXPECT_NE(note.find("1.25x"), std::string::npos) << note;
    EXPECT_NE(note.find("2.300 GHz of /proc/cpuinfo cpu MHz (a base or nominal clock)"), std::string::npos) << note;
    EXPECT_NE(note.find("--peak-tflops"), std::string::npos) << note;
    f.clock_is_max = true;
    EXPECT_EQ(peak_below_ceiling_note(p, f, 1.25 * p.flops_per_s).find("base or nominal"), std::string::npos);
    EXPECT_EQ(peak_below_ceiling_note(CpuPeak{}, f, 1e12), "");  // no computed peak, nothing to compare
}

TEST(CpuPeak, CoresAreTheProcessShareOfPhysicalCores) {
    EXPECT_EQ(peak_cores(2, 2, 1), 2);  // one process, a thread per core
    EXPECT_EQ(peak_cores(4, 8, 1), 4);  // hyperthreads add no FMA units
    EXPECT_EQ(peak_cores(4, 4, 2), 2);  // mpirun -np 2 on 4 cores with 8 hardware threads
    EXPECT_EQ(peak_cores(2, 1, 2), 1);  // this VM's mpirun -np 2
    EXPECT_EQ(peak_cores(8, 2, 2), 2);  // fewer threads than the share: the threads
    EXPECT_EQ(peak_cores(2, 1, 4), 1);  // oversubscribed: still a core of its own to count
    EXPECT_EQ(peak_cores(4, 4, 0), 4);  // no launcher count
}
