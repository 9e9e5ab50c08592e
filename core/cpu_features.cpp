// CPU feature detection: cpuid leaves 0, 1, 7 (subleaves 0 and 1), 0x16 and the brand string,
// XCR0 for the OS-saved register state, /proc/cpuinfo for the core topology, and the clock from
// the first of: the maximum (boost) clock the machine states (cpuid leaf 0x16, sysfs cpufreq
// cpuinfo_max_freq), then a base or nominal one (cpuid leaf 0x16, sysfs base_frequency, the
// "@ x.xxGHz" of the model name, /proc/cpuinfo "cpu MHz"). The maximum comes first because cores
// run at it under load where they can, and a peak below what the cores reach makes MFU read
// high (as GPU peaks are quoted at the boost clock). The cache sizes are glibc's (sysconf, from
// cpuid leaf 4 or 0x80000005/6). No timing: two detections give the same answer.
#include "core/cpu_features.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SIXND_X86 1
#endif

namespace sixnd {
namespace {

struct Regs {
    unsigned a = 0, b = 0, c = 0, d = 0;
};

#ifdef SIXND_X86
Regs cpuid(unsigned leaf, unsigned sub = 0) {
    Regs r;
    __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
    return r;
}

unsigned long long xcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<unsigned long long>(hi) << 32) | lo;
}

bool bit(unsigned v, int i) { return (v >> i) & 1u; }

void detect_isa(CpuFeatures& f, ClockEvidence& clocks) {
    const Regs l0 = cpuid(0);
    const unsigned max_leaf = l0.a;
    char vendor[13] = {};
    std::memcpy(vendor, &l0.b, 4);
    std::memcpy(vendor + 4, &l0.d, 4);
    std::memcpy(vendor + 8, &l0.c, 4);
    f.vendor = vendor;
    const Regs l1 = cpuid(1);
    const unsigned base_family = (l1.a >> 8) & 0xf, base_model = (l1.a >> 4) & 0xf;
    f.family = static_cast<int>(base_family == 0xf ? base_family + ((l1.a >> 20) & 0xff) : base_family);
    f.model = static_cast<int>(base_family == 0x6 || base_family == 0xf ? base_model + (((l1.a >> 16) & 0xf) << 4)
                                                                         : base_model);
    const unsigned long long x = bit(l1.c, 27) ? xcr0() : 0;  // OSXSAVE: the OS manages XCR0
    const bool avx_state = (x & 0x6) == 0x6;                  // XMM and YMM saved
    const bool avx512_state = avx_state && (x & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
    const bool amx_state = (x & 0x60000) == 0x60000;            // XTILECFG, XTILEDATA
    f.fma = avx_state && bit(l1.c, 12);
    if (max_leaf >= 7) {
        const Regs l7 = cpuid(7, 0);
        f.avx2 = avx_state && bit(l7.b, 5);
        f.avx512f = avx512_state && bit(l7.b, 16);
        f.amx_bf16 = amx_state && bit(l7.d, 22) && bit(l7.d, 24);
        if (l7.a >= 1) f.avx512_bf16 = f.avx512f && bit(cpuid(7, 1).a, 5);
    }
    if (cpuid(0x80000000).a >= 0x80000004) {
        char brand[49] = {};
        for (unsigned i = 0; i < 3; i++) {
            const Regs r = cpuid(0x80000002 + i);
            std::memcpy(brand + 16 * i, &r, 16);
        }
        f.model_name = brand;
        // Padded with spaces on either side by some vendors and hypervisors.
        const auto first = f.model_name.find_first_not_of(' ');
        f.model_name = first == std::string::npos ? "" : f.model_name.substr(first, f.model_name.find_last_not_of(' ') - first + 1);
    }
    if (max_leaf >= 0x16) {
        const Regs l16 = cpuid(0x16);
        clocks.cpuid_base_mhz = l16.a & 0xffff;
        clocks.cpuid_max_mhz = l16.b & 0xffff;
    }
}
#else
void detect_isa(CpuFeatures&, ClockEvidence&) {}
#endif

void apply_cap(CpuFeatures& f) {
    const char* env = std::getenv("SIXND_CPU_ISA");
    apply_isa_cap(f, env && *env ? env : "native");
}

// SIXND_BF16_MATMUL, after the cap: "bf16" needs dot products the capped CPU still has.
void apply_bf16_matmul_switch(CpuFeatures& f) {
    const char* env = std::getenv("SIXND_BF16_MATMUL");
    const std::string v = env && *env ? env : "auto";
    if (v != "auto" && v != "bf16" && v != "fp32")
        throw Error("SIXND_BF16_MATMUL", "unknown value '" + v + "' (expected auto, bf16 or fp32)");
    if (v == "bf16" && !f.native_bf16())
        throw Error("SIXND_BF16_MATMUL", "bf16 needs BF16 dot products (AVX512-BF16 or AMX), which this CPU" +
                                             (f.isa_cap == "native" ? std::string() : " under SIXND_CPU_ISA=" + f.isa_cap) +
                                             " does not have");
    f.bf16_matmul_switch = v;
}

// Logical CPUs in the affinity mask, and how many distinct physical cores they are.
void detect_cores(CpuFeatures& f, std::string& cpuinfo_mhz, std::string& cpuinfo_model) {
    cpu_set_t set;
    CPU_ZERO(&set);
    const bool have_mask = sched_getaffinity(0, sizeof set, &set) == 0;
    f.logical_cpus = have_mask ? CPU_COUNT(&set) : 1;
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    int proc = -1;
    std::string package, core;
    std::set<std::pair<std::string, std::string>> cores;
    auto value = [&]() {
        const auto p = line.find(':');
        return p == std::string::npos ? std::string() : line.substr(p + 1 + (p + 1 < line.size() && line[p + 1] == ' '));
    };
    auto finish = [&]() {
        if (proc >= 0 && (!have_mask || CPU_ISSET(proc, &set)) && !core.empty()) cores.insert({package, core});
    };
    while (std::getline(in, line)) {
        if (line.rfind("processor", 0) == 0) {
            finish();
            proc = std::atoi(value().c_str());
            package.clear();
            core.clear();
        } else if (line.rfind("physical id", 0) == 0) {
            package = value();
        } else if (line.rfind("core id", 0) == 0) {
            core = value();
        } else if (line.rfind("cpu MHz", 0) == 0 && cpuinfo_mhz.empty() && (!have_mask || CPU_ISSET(proc, &set))) {
            cpuinfo_mhz = value();
        } else if (line.rfind("model name", 0) == 0 && cpuinfo_model.empty()) {
            cpuinfo_model = value();
        }
    }
    finish();
    f.physical_cores = cores.empty() ? f.logical_cpus : static_cast<int>(cores.size());
}

// The x.xx of an "@ x.xxGHz" in a brand string ("Intel(R) Xeon(R) CPU @ 2.30GHz"), or 0.
double model_name_ghz(const std::string& name) {
    for (size_t at = name.find('@'); at != std::string::npos; at = name.find('@', at + 1)) {
        const char* p = name.c_str() + at + 1;
        while (*p == ' ') p++;
        if (*p < '0' || *p > '9') continue;
        char* end = nullptr;
        const double ghz = std::strtod(p, &end);
        while (*end == ' ') end++;
        if (std::strncmp(end, "GHz", 3) == 0 && ghz > 0) return ghz;
    }
    return 0;
}

double read_khz(const char* path) {
    std::ifstream in(path);
    double khz = 0;
    return in >> khz && khz > 0 ? khz : 0;
}

}  // namespace

// A cap above the CPU would run its own path under another's name (the header's isa_cap, oneDNN
// capped to instructions it never had): refused, as an unknown value is.
void apply_isa_cap(CpuFeatures& f, const std::string& cap) {
    auto refuse_without = [&](bool has, const char* what) {
        if (!has)
            throw Error("SIXND_CPU_ISA", cap + " needs " + what + ", which this CPU (" + f.flags() +
                                             ") does not have: leave it unset to run what the CPU has");
    };
    if (cap == "avx2") {
        refuse_without(f.avx2 && f.fma, "AVX2 and FMA");
        f.avx512f = f.avx512_bf16 = f.amx_bf16 = false;
    } else if (cap == "avx512_core") {
        refuse_without(f.avx512f, "AVX-512");
        f.avx512_bf16 = f.amx_bf16 = false;
    } else if (cap != "native") {
        throw Error("SIXND_CPU_ISA", "unknown value '" + cap + "' (expected native, avx512_core or avx2)");
    }
    f.isa_cap = cap;
}

CpuClock pick_clock(const ClockEvidence& e) {
    if (e.cpuid_max_mhz > 0) return {e.cpuid_max_mhz / 1000.0, "cpuid leaf 0x16 maximum frequency", true};
    if (e.sysfs_max_khz > 0) return {e.sysfs_max_khz / 1e6, "sysfs cpufreq cpuinfo_max_freq", true};
    if (e.cpuid_base_mhz > 0) return {e.cpuid_base_mhz / 1000.0, "cpuid leaf 0x16 base frequency", false};
    if (e.sysfs_base_khz > 0) return {e.sysfs_base_khz / 1e6, "sysfs cpufreq base_frequency", false};
    if (const double ghz = model_name_ghz(e.model_name)) return {ghz, "model name", false};
    const double mhz = std::atof(e.cpuinfo_mhz.c_str());
    if (mhz > 0) return {mhz / 1000.0, "/proc/cpuinfo cpu MHz", false};
    return {0, "unknown", false};
}

std::string CpuFeatures::flags() const {
    std::string s;
    for (auto [on, name] : {std::pair{avx2, "avx2"}, std::pair{fma, "fma"}, std::pair{avx512f, "avx512f"},
                            std::pair{avx512_bf16, "avx512_bf16"}, std::pair{amx_bf16, "amx_bf16"}})
        if (on) s += (s.empty() ? "" : " ") + std::string(name);
    return s.empty() ? "none" : s;
}

nlohmann::json CpuFeatures::to_json() const {
    return {{"vendor", vendor},           {"model_name", model_name},         {"family", family},
            {"model", model},             {"flags", flags()},                 {"isa_cap", isa_cap},
            {"native_bf16", native_bf16()}, {"bf16_matmul_native", bf16_matmul_native()},
            {"bf16_matmul_switch", bf16_matmul_switch},
            {"logical_cpus", logical_cpus}, {"physical_cores", physical_cores},
            {"clock_ghz", clock_ghz},     {"clock_source", clock_source},     {"clock_is_max", clock_is_max},
            {"l1d_bytes", l1d_bytes},     {"l2_bytes", l2_bytes}};
}

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
    ClockEvidence clocks;
    detect_isa(f, clocks);
    std::string model;
    detect_cores(f, clocks.cpuinfo_mhz, model);
    if (f.model_name.empty()) f.model_name = model;
    clocks.model_name = f.model_name;
    clocks.sysfs_max_khz = read_khz("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    clocks.sysfs_base_khz = read_khz("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
    const CpuClock c = pick_clock(clocks);
    f.clock_ghz = c.ghz;
    f.clock_source = c.source;
    f.clock_is_max = c.is_max;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
    f.l1d_bytes = std::max(0L, sysconf(_SC_LEVEL1_DCACHE_SIZE));
    f.l2_bytes = std::max(0L, sysconf(_SC_LEVEL2_CACHE_SIZE));
#endif
    apply_cap(f);
    apply_bf16_matmul_switch(f);
    return f;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect_cpu_features();
    return f;
}

}  // namespace sixnd
