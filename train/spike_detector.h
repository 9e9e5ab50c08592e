// Flags loss spikes: a step whose loss sits more than `z` standard deviations above an
// exponential moving average of recent losses (after a warm-up of `warmup` steps). Spiking
// steps are not folded into the average, so one spike does not hide the next.
#pragma once
#include <cmath>

namespace sixnd {

class SpikeDetector {
public:
    explicit SpikeDetector(double z = 6.0, int warmup = 20, double alpha = 0.05) : z_(z), warmup_(warmup), alpha_(alpha) {}

    // Returns true when `loss` is a spike; otherwise updates the average.
    bool update(double loss) {
        if (n_ >= warmup_ && loss > mean_ + z_ * std::sqrt(var_) + 1e-6) return true;
        if (n_ == 0) {
            mean_ = loss;
        } else {
            double d = loss - mean_;
            mean_ += alpha_ * d;
            var_ = (1 - alpha_) * (var_ + alpha_ * d * d);
        }
        n_++;
        return false;
    }
    double mean() const { return mean_; }
    double stddev() const { return std::sqrt(var_); }

private:
    double z_;
    int warmup_;
    double alpha_;
    double mean_ = 0, var_ = 0;
    int n_ = 0;
};

}  // namespace sixnd
