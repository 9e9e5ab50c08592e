// The per-op profile's clock on a GPU (core/op_clock.h): each mark is a CUDA event recorded on
// the ops' stream, so a kernel is timed by the device between its two events while the host
// goes on queueing; resolve() waits for the newest event once, and a span is read with
// cudaEventElapsedTime (resolution ~0.5 us). Events are pooled: clear() keeps them for reuse.
#include "model/cuda/cuda_op_clock.h"

#include <vector>

#include "model/cuda/cuda_check.h"

namespace sixnd {

namespace {

class CudaEventClock final : public OpClock {
public:
    explicit CudaEventClock(cudaStream_t stream) : stream_(stream) {}
    ~CudaEventClock() override {
        for (cudaEvent_t e : pool_) cudaEventDestroy(e);
    }
    int mark() override {
        if (used_ == pool_.size()) {
            cudaEvent_t e;
            SIXND_CUDA(cudaEventCreate(&e));
            pool_.push_back(e);
        }
        SIXND_CUDA(cudaEventRecord(pool_[used_], stream_));
        return static_cast<int>(used_++);
    }
    void resolve() override {
        if (used_ > 0) SIXND_CUDA(cudaEventSynchronize(pool_[used_ - 1]));
    }
    double seconds(int a, int b) const override {
        float ms = 0;
        SIXND_CUDA(cudaEventElapsedTime(&ms, pool_.at(a), pool_.at(b)));
        return ms * 1e-3;
    }
    void clear() override { used_ = 0; }

private:
    cudaStream_t stream_;
    std::vector<cudaEvent_t> pool_;
    size_t used_ = 0;
};

}  // namespace

std::unique_ptr<OpClock> make_cuda_event_clock(cudaStream_t stream) { return std::make_unique<CudaEventClock>(stream); }

}  // namespace sixnd
