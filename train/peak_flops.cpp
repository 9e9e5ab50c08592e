#include "train/peak_flops.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/transfer.h"

namespace sixnd {

// Best of a few timed runs of one large square-ish matmul in the model's dtype.
static double measure_matmul_ceiling(Backend& be) {
    Ops& ops = *be.ops;
    MemoryBackend& mem = *be.memory;
    const int N = 512, C = 1024, OC = 1024;
    const DType dt = ops.dtype();
    DeviceBuffer a(&mem, size_t(N) * C * dtype_size(dt), MemCategory::workspace);
    DeviceBuffer w(&mem, size_t(OC) * C * dtype_size(dt), MemCategory::workspace);
    DeviceBuffer o(&mem, size_t(N) * OC * dtype_size(dt), MemCategory::workspace);
    std::vector<float> ones(size_t(OC) * C, 0.01f);
    upload_f32(mem, a.get(), dt, ones.data(), size_t(N) * C);
    upload_f32(mem, w.get(), dt, ones.data(), size_t(OC) * C);
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        auto t0 = std::chrono::steady_clock::now();
        ops.matmul_forward(o.get(), nullptr, a.get(), w.get(), nullptr, N, C, OC);
        mem.sync();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (rep > 0 && s > 0) best = std::max(best, 2.0 * N * C * OC / s);
    }
    return best;
}

PeakFlops peak_flops(Backend& be, double override_tflops) {
    if (override_tflops > 0) return {override_tflops * 1e12, "--peak-tflops"};
    if (be.table_peak_tflops > 0)
        return {be.table_peak_tflops * 1e12,
                "table: " + be.device_name + (be.ops->dtype() == DType::bf16 ? " bf16 dense" : " tf32 dense")};
    return {measure_matmul_ceiling(be), "measured matmul ceiling (" + be.device_name + ", " + dtype_name(be.ops->dtype()) + ")"};
}

}  // namespace sixnd
