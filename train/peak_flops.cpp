#include "train/peak_flops.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/local_rank.h"
#include "core/transfer.h"
#include "model/cpu/cpu_ops.h"

namespace sixnd {
namespace {

constexpr int kCeilN = 512, kCeilC = 1024, kCeilOC = 1024;

// Best of ten timed runs of one large square-ish matmul in the model's dtype: the best, since
// another process on the cores only ever slows a run down, and ten, since one that shares them
// (a test beside it) leaves only some runs undisturbed. Its buffers are not the run's memory:
// the ledger's peaks are put back as they were (a small model's would otherwise be these).
double measure_matmul_ceiling(Backend& be) {
    Ops& ops = *be.ops;
    MemoryBackend& mem = *be.memory;
    const MemoryLedger::Peaks before = mem.ledger().peaks();
    const int N = kCeilN, C = kCeilC, OC = kCeilOC;
    const DType dt = ops.dtype();
    double best = 0;
    {
        DeviceBuffer a(&mem, size_t(N) * C * dtype_size(dt), MemCategory::workspace);
        DeviceBuffer w(&mem, size_t(OC) * C * dtype_size(dt), MemCategory::workspace);
        DeviceBuffer o(&mem, size_t(N) * OC * dtype_size(dt), MemCategory::workspace);
        std::vector<float> ones(size_t(OC) * C, 0.01f);
        upload_f32(mem, a.get(), dt, ones.data(), size_t(N) * C);
        upload_f32(mem, w.get(), dt, ones.data(), size_t(OC) * C);
        for (int rep = 0; rep < 11; rep++) {
            auto t0 = std::chrono::steady_clock::now();
            ops.matmul_forward(o.get(), nullptr, a.get(), w.get(), nullptr, N, C, OC);
            mem.sync();
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (rep > 0 && s > 0) best = std::max(best, 2.0 * N * C * OC / s);
        }
    }
    mem.ledger().restore_peaks(before);
    return best;
}

std::string fixed(double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

}  // namespace

CpuPeak cpu_peak(const CpuFeatures& f, DType dtype, int cores, int own_lanes) {
    if (f.clock_ghz <= 0 || cores <= 0) return {};
    const bool amd = f.vendor == "AuthenticAMD";
    const int feature_lanes = f.avx512f ? 16 : (f.avx2 || f.fma ? 8 : 4);
    const int vector = own_lanes > 0 ? own_lanes : feature_lanes;
    int lanes = vector;
    std::string width = vector == 16 ? "AVX-512" : (vector == 8 ? "AVX2" : "SSE");
    if (amd && f.family == 0x19 && vector == 16) {
        lanes = 8;
        width += " on 256-bit units (Zen 4)";
    } else if (amd && f.family == 0x17 && f.model < 0x30) {
        lanes = 4;
        width = "AVX2 on 128-bit units (Zen/Zen+)";
    }
    if (vector != feature_lanes) width += ": the width sixnd's kernels were built for";
    const int units = 2;
    const int per_fma = f.fma ? 2 : 1;
    const double fp32_cycle = double(lanes) * units * per_fma;
    double cycle = fp32_cycle;
    std::string how = std::to_string(lanes) + " fp32 lanes (" + width + ") x " + std::to_string(units) +
                      " FMA units (assumed) x " + std::to_string(per_fma) + " FLOP";
    if (dtype == DType::bf16) {
        if (f.bf16_matmul_native() && own_lanes > 0) {
            how += " (bf16 runs in fp32: this build has no oneDNN, its packed GEMM runs every product)";
        } else if (f.bf16_matmul_native()) {
            if (f.amx_bf16) {
                cycle = 1024;
                how = "AMX-BF16 1024 FLOP/cycle";
            } else if (f.bf16_dots_beat_fma()) {
                cycle = 2 * fp32_cycle;
                how += " x 2 (AVX512-BF16 dot products)";
            } else {
                // Dot products that run below the FP32 FMA rate (forced): that rate is the ceiling.
                how += " (AVX512-BF16 dot products by SIXND_BF16_MATMUL=bf16, at most the FP32 FMA rate on this CPU)";
            }
        } else if (!f.native_bf16()) {
            how += " (bf16 runs in fp32: no BF16 dot products)";
        } else if (f.bf16_matmul_switch == "fp32") {
            how += " (bf16 runs in fp32: SIXND_BF16_MATMUL=fp32)";
        } else {
            how += " (bf16 runs in fp32: this CPU's BF16 dot products are slower than its FP32 FMAs)";
        }
    }
    const double flops = cycle * cores * f.clock_ghz * 1e9;
    return {flops, "cpu " + std::string(dtype_name(dtype)) + " peak: " + how + " x " + std::to_string(cores) +
                       " cores x " + fixed(f.clock_ghz, 3) + " GHz (" + f.clock_source + ") = " +
                       fixed(flops / 1e9, 1) + " GFLOP/s"};
}

std::string peak_below_ceiling_note(const CpuPeak& peak, const CpuFeatures& f, double achievable) {
    if (peak.flops_per_s <= 0 || achievable <= peak.flops_per_s) return "";
    return "the measured matmul ceiling (" + fixed(achievable / 1e9, 1) + " GFLOP/s) is " +
           fixed(achievable / peak.flops_per_s, 2) + "x the peak computed from the CPU's features: the cores run above the " +
           fixed(f.clock_ghz, 3) + " GHz of " + f.clock_source + (f.clock_is_max ? "" : " (a base or nominal clock)") +
           ", so MFU reads high; --peak-tflops sets the peak";
}

void measure_achievable(Backend& be, PeakFlops& p) {
    p.achievable = measure_matmul_ceiling(be);
    p.achievable_source = "measured matmul ceiling (" + std::string(dtype_name(be.ops->dtype())) + ", " +
                          std::to_string(kCeilN) + "x" + std::to_string(kCeilC) + "x" + std::to_string(kCeilOC) + ")";
}

int peak_cores(int physical_cores, int threads, int processes_here) {
    return std::max(1, std::min(threads, physical_cores / std::max(1, processes_here)));
}

PeakFlops peak_flops(Backend& be, double override_tflops) {
    const std::string dt = dtype_name(be.ops->dtype());
    if (override_tflops > 0) return {override_tflops * 1e12, "--peak-tflops", "--peak-tflops", 0, "", ""};
    if (be.table_peak_tflops > 0) {
        const std::string kind = be.ops->dtype() == DType::bf16 ? "bf16 dense" : "fp32";
        return {be.table_peak_tflops * 1e12, "table: " + be.device_name + " " + kind, be.device_name + " " + kind + " peak", 0, "", ""};
    }
    PeakFlops p;
    measure_achievable(be, p);
    if (be.device == "cpu") {
        const int cores = peak_cores(cpu_features().physical_cores, omp_get_max_threads(), local_process_count());
        const CpuPeak cp = cpu_peak(cpu_features(), be.ops->dtype(), cores, own_gemm_lanes(be.ops->dtype()));
        if (cp.flops_per_s > 0) {
            p.flops_per_s = cp.flops_per_s;
            p.source = cp.source;
            p.against = "cpu " + dt + " peak";
            p.note = peak_below_ceiling_note(cp, cpu_features(), p.achievable);
            return p;
        }
    }
    p.flops_per_s = p.achievable;
    p.source = p.achievable_source + " of " + be.device_name;
    p.against = "measured " + dt + " ceiling";
    return p;
}

}  // namespace sixnd
