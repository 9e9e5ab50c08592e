// Picks the device: `cpu`, `cuda`, or `auto` (CUDA when built with it and a device is present).
// The returned pair is all the model, trainer and ZeRO engine ever see of the hardware.
#pragma once
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/memory.h"
#include "model/ops.h"

namespace sixnd {

struct Backend {
    std::string device;       // "cpu" or "cuda"
    std::string device_name;  // e.g. the CPU model or "NVIDIA H200"
    int device_index = 0;
    // Dense peak TFLOP/s of the device in the model's dtype from the table (0: not known —
    // CPUs and devices missing from the table; the trainer then measures a matmul ceiling).
    double table_peak_tflops = 0;
    std::unique_ptr<MemoryBackend> memory;
    std::unique_ptr<Ops> ops;
};

// "cpu" or "cuda": what `device` (cpu, cuda or auto) resolves to on this machine.
std::string resolve_device(const std::string& device);

// local_rank: this process's rank on its node (under mpirun); the GPU is local_rank modulo the
// visible devices (core/local_rank.h). Ignored on the CPU.
Backend make_backend(const std::string& device, DType dtype, int local_rank = 0);

// Bytes in use on the device as the driver sees it (cudaMemGetInfo), beyond what the ledger
// knows (the CUDA context, library workspaces); 0 on the CPU.
size_t device_bytes_in_use(const Backend& b);

}  // namespace sixnd
