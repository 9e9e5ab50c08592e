#include "train/profile_roof.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "plan/devices.h"

namespace sixnd {

double measure_stream_bandwidth() {
    const long n = 1L << 24;  // 3 arrays x 128 MiB of doubles
    std::vector<double> a(n), b(n), c(n);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = 1.0 + i % 7;
        c[i] = 2.0 - i % 5;
    }
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        const double s = 0.5 + rep;
        const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (rep > 0 && secs > 0) best = std::max(best, 3.0 * 8 * n / secs);
    }
    return best;
}

static double device_copy_bandwidth(MemoryBackend& mem) {
    const size_t bytes = size_t(256) << 20;
    DeviceBuffer a(&mem, bytes, MemCategory::workspace), b(&mem, bytes, MemCategory::workspace);
    mem.memset(a.get(), 0, bytes);
    double best = 0;
    for (int rep = 0; rep < 4; rep++) {
        mem.sync();
        const auto t0 = std::chrono::steady_clock::now();
        mem.copy(b.get(), a.get(), bytes);
        mem.sync();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (rep > 0 && secs > 0) best = std::max(best, 2.0 * bytes / secs);
    }
    return best;
}

Roof machine_roof(Backend& be, const PeakFlops& peak) {
    Roof r;
    r.peak_flops = peak.flops_per_s;
    r.peak_source = peak.source;
    if (be.device == "cpu") {
        // A CPU's roof is what its matmul reaches, not the feature peak MFU is against: the
        // feature peak is rarely within reach of a 2-core memory system, and against it every
        // matmul would read as memory-bound. Nor is it --peak-tflops, which skipped the measuring.
        PeakFlops measured = peak;
        if (measured.achievable <= 0) measure_achievable(be, measured);
        r.peak_flops = measured.achievable;
        r.peak_source = measured.achievable_source;
        r.mem_bw = measure_stream_bandwidth();
        r.bw_source = "measured triad bandwidth";
        r.mem_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
        return r;
    }
    if (const plan::DeviceSpec* d = plan::find_device(be.device_name)) {
        r.mem_bw = d->mem_bw;
        r.mem_bytes = d->mem_bytes;
        r.bw_source = "table: " + d->name;
        return r;
    }
    r.mem_bw = device_copy_bandwidth(*be.memory);
    r.bw_source = "measured device copy bandwidth";
    return r;
}

}  // namespace sixnd
