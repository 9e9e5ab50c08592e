#include "core/op_clock.h"

#include <chrono>
#include <vector>

#include "core/memory.h"

namespace sixnd {

namespace {

class HostClock final : public OpClock {
public:
    explicit HostClock(MemoryBackend& mem) : mem_(mem) {}
    int mark() override {
        mem_.sync();
        marks_.push_back(std::chrono::steady_clock::now());
        return static_cast<int>(marks_.size()) - 1;
    }
    void resolve() override {}
    double seconds(int a, int b) const override { return std::chrono::duration<double>(marks_.at(b) - marks_.at(a)).count(); }
    void clear() override { marks_.clear(); }

private:
    MemoryBackend& mem_;
    std::vector<std::chrono::steady_clock::time_point> marks_;
};

}  // namespace

std::unique_ptr<OpClock> make_host_clock(MemoryBackend& mem) { return std::make_unique<HostClock>(mem); }

}  // namespace sixnd
