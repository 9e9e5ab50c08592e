// The roofline of the device a run is on: peak FLOP/s (the one MFU uses) and memory bandwidth,
// and their ratio, the ridge point in FLOP per byte. GPUs in plan/'s device table use its
// bandwidth; CPUs (and unknown devices) a measured one — on the CPU a STREAM-style triad over
// all threads, a[i] = b[i] + s c[i] on arrays far larger than the caches, counted as 3 x 8 bytes
// per element; elsewhere a device-to-device copy (2 x bytes).
#pragma once
#include <string>

#include "model/backend.h"
#include "train/peak_flops.h"

namespace sixnd {

struct Roof {
    double peak_flops = 0;
    double mem_bw = 0;
    double mem_bytes = 0;  // device (or host) memory, 0 when unknown
    std::string peak_source, bw_source;
    double ridge() const { return peak_flops / mem_bw; }
};

double measure_stream_bandwidth();
Roof machine_roof(Backend& be, const PeakFlops& peak);

}  // namespace sixnd
