// Times spans of device work for the per-op profile. mark() puts a point on the device's
// timeline and returns its index; resolve() waits until every mark so far has passed; then
// seconds(a, b) is the time between marks a and b; clear() forgets the marks.
// The host clock (CPU backends) reads the steady clock at each mark after a sync, so it costs
// nothing on a CPU. The CUDA clock records events on the ops' stream (model/cuda): an op is
// timed on the device without stalling the queue around it, and the host waits once, at
// resolve().
#pragma once
#include <memory>

namespace sixnd {

class MemoryBackend;

class OpClock {
public:
    virtual ~OpClock() = default;
    virtual int mark() = 0;
    virtual void resolve() = 0;
    virtual double seconds(int a, int b) const = 0;
    virtual void clear() = 0;
};

std::unique_ptr<OpClock> make_host_clock(MemoryBackend& mem);

}  // namespace sixnd
