// The CUDA backend's OpClock (core/op_clock.h): events on `stream`.
#pragma once
#include <cuda_runtime.h>

#include <memory>

#include "core/op_clock.h"

namespace sixnd {

std::unique_ptr<OpClock> make_cuda_event_clock(cudaStream_t stream);

}  // namespace sixnd
