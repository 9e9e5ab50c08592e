// What this CPU can do, detected once per process: the vector instruction sets the kernels and
// oneDNN may use (cpuid, checked against the register state the OS saves, XCR0), the cores this
// process may run on, the clock the peak FLOP/s is computed from (with where it came from), and
// the sizes of a core's L1 data and L2 caches, which the packed GEMM sizes its blocks by.
//
// SIXND_CPU_ISA caps what is reported, so that one machine can run the code another CPU kind
// runs: "avx2" (no AVX-512, no AVX512-BF16, no AMX: an AVX2-only EPYC or laptop), "avx512_core"
// (AVX-512 without BF16 arithmetic), "native" or unset (everything present); a kind the CPU does
// not reach is refused. The CPU matmul caps oneDNN to the same ISA before its first use
// (model/cpu/matmul.cpp).
//
// SIXND_BF16_MATMUL overrides where BF16 matmuls run: "bf16" (the BF16 dot products, where the
// CPU, as capped, has them), "fp32" (the packed GEMM in FP32 arithmetic), "auto" or unset (the
// rule of bf16_matmul_native()), so that the choice can be measured both ways on one machine.
// BF16 flash attention follows it where the dot products are AVX512-BF16 ones (flash_on_bf16_dots).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace sixnd {

struct CpuFeatures {
    std::string vendor;      // cpuid vendor: "GenuineIntel", "AuthenticAMD", ...
    std::string model_name;  // cpuid brand string
    int family = 0, model = 0;
    // Usable: the CPU has it, the OS saves its registers, and SIXND_CPU_ISA does not cap it.
    bool avx2 = false, fma = false, avx512f = false, avx512_bf16 = false, amx_bf16 = false;
    std::string isa_cap = "native";  // the SIXND_CPU_ISA in force
    std::string bf16_matmul_switch = "auto";  // the SIXND_BF16_MATMUL in force
    int logical_cpus = 1;            // CPUs in this process's affinity mask
    int physical_cores = 1;          // distinct (package, core) among them
    double clock_ghz = 0;            // 0: not known
    std::string clock_source;        // where clock_ghz came from
    bool clock_is_max = false;       // clock_ghz is the maximum (boost) clock, not a base or nominal one
    long l1d_bytes = 0, l2_bytes = 0;  // one core's L1 data and L2 caches (glibc's cpuid reading); 0: not known

    // BF16 dot products in hardware (AVX512-BF16 or AMX).
    bool native_bf16() const { return avx512_bf16 || amx_bf16; }
    // Whether those dot products are the faster arithmetic for matmuls, so that BF16 matmuls run
    // on them rather than on FP32 FMAs (BF16 storage widened as the packed GEMM packs it). AMX is;
    // so is AVX512-BF16 on AMD (a Zen 4 core issues VDPBF16PS at twice its FP32 FMA rate). An
    // Intel core without usable AMX is not: an Emerald Rapids core whose VM hides AMX ran
    // VDPBF16PS at 75 GFLOP/s against 167 for its FP32 FMAs (2026-12-02), and oneDNN's BF16
    // matmuls there at 0.6x of its FP32 ones.
    bool bf16_dots_beat_fma() const { return amx_bf16 || (avx512_bf16 && vendor == "AuthenticAMD"); }
    // Where BF16 matmuls run: that rule, unless SIXND_BF16_MATMUL decides.
    bool bf16_matmul_native() const {
        return bf16_matmul_switch == "auto" ? bf16_dots_beat_fma() : bf16_matmul_switch == "bf16";
    }
    std::string flags() const;  // e.g. "avx2 fma avx512f avx512_bf16"
    nlohmann::json to_json() const;
};

// What the machine states of its clock; 0 or empty where a source says nothing.
struct ClockEvidence {
    unsigned cpuid_max_mhz = 0, cpuid_base_mhz = 0;  // cpuid leaf 0x16 (Intel since Skylake)
    double sysfs_max_khz = 0, sysfs_base_khz = 0;    // cpufreq cpuinfo_max_freq, base_frequency
    std::string model_name;                          // its "@ x.xxGHz", if any
    std::string cpuinfo_mhz;                         // /proc/cpuinfo "cpu MHz" (current or nominal)
};
struct CpuClock {
    double ghz = 0;  // 0: unknown
    std::string source;
    bool is_max = false;
};
// The clock a peak is computed at: the first stated maximum (boost) clock, else the first base or
// nominal one (see cpu_features.cpp for the order). Pure: no timing, no I/O.
CpuClock pick_clock(const ClockEvidence& e);

// SIXND_CPU_ISA's value applied to detected features: clears what the named CPU kind lacks, and
// refuses an unknown kind or one that needs what f lacks (Error naming SIXND_CPU_ISA).
void apply_isa_cap(CpuFeatures& f, const std::string& cap);

// Detected on first use, then the same object for the life of the process.
const CpuFeatures& cpu_features();
// A fresh detection (no cache): what cpu_features() holds, for tests of determinism.
CpuFeatures detect_cpu_features();

}  // namespace sixnd
