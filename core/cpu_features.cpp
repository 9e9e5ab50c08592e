// CPU feature detection: cpuid leaves 0, 1, 7 (subleaves 0 and 1), 0x16 and the brand string,
// XCR0 for the OS-saved register state, /proc/cpuinfo for the core topology, and the clock from
// the first of: cpuid leaf 0x16 base frequency, sysfs cpufreq base_frequency, the "@ x.xxGHz" of
// the model name, /proc/cpuinfo "cpu MHz". No timing: two detections give the same answer.
#include "core/cpu_features.h"

#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
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

void detect_isa(CpuFeatures& f) {
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
        const auto first = f.model_name.find_first_not_of(' ');
        f.model_name = first == std::string::npos ? "" : f.model_name.substr(first);
    }
    if (max_leaf >= 0x16) {
        const unsigned mhz = cpuid(0x16).a & 0xffff;
        if (mhz > 0) {
            f.clock_ghz = mhz / 1000.0;
            f.clock_source = "cpuid leaf 0x16 base frequency";
        }
    }
}
#else
void detect_isa(CpuFeatures&) {}
#endif

// SIXND_CPU_ISA: clears what the named CPU kind lacks.
void apply_cap(CpuFeatures& f) {
    const char* env = std::getenv("SIXND_CPU_ISA");
    const std::string cap = env && *env ? env : "native";
    if (cap == "avx2") {
        f.avx512f = f.avx512_bf16 = f.amx_bf16 = false;
    } else if (cap == "avx512_core") {
        f.avx512_bf16 = f.amx_bf16 = false;
    } else if (cap != "native") {
        throw Error("SIXND_CPU_ISA", "unknown value '" + cap + "' (expected native, avx512_core or avx2)");
    }
    f.isa_cap = cap;
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

void detect_clock(CpuFeatures& f, const std::string& cpuinfo_mhz) {
    if (f.clock_ghz > 0) return;
    std::ifstream base("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency");
    double khz = 0;
    if (base >> khz && khz > 0) {
        f.clock_ghz = khz / 1e6;
        f.clock_source = "sysfs cpufreq base_frequency";
        return;
    }
    std::smatch m;
    static const std::regex at_ghz(R"(@\s*([0-9]+(\.[0-9]+)?)\s*GHz)");
    if (std::regex_search(f.model_name, m, at_ghz)) {
        f.clock_ghz = std::atof(m[1].str().c_str());
        f.clock_source = "model name";
        return;
    }
    const double mhz = std::atof(cpuinfo_mhz.c_str());
    if (mhz > 0) {
        f.clock_ghz = mhz / 1000.0;
        f.clock_source = "/proc/cpuinfo cpu MHz";
        return;
    }
    f.clock_source = "unknown";
}

}  // namespace

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
            {"native_bf16", native_bf16()}, {"logical_cpus", logical_cpus}, {"physical_cores", physical_cores},
            {"clock_ghz", clock_ghz},     {"clock_source", clock_source}};
}

CpuFeatures detect_cpu_features() {
    CpuFeatures f;
    detect_isa(f);
    std::string mhz, model;
    detect_cores(f, mhz, model);
    if (f.model_name.empty()) f.model_name = model;
    detect_clock(f, mhz);
    apply_cap(f);
    return f;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect_cpu_features();
    return f;
}

}  // namespace sixnd
