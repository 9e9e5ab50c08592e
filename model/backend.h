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
    std::unique_ptr<MemoryBackend> memory;
    std::unique_ptr<Ops> ops;
};

Backend make_backend(const std::string& device, DType dtype);

}  // namespace sixnd
