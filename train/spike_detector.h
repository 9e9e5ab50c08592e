// Loss-spike detection over a rolling window (llm.c's -sl/-sg, OLMo-core's spike skipping): a
// step spikes when its loss, or its global gradient norm, sits more than z standard deviations
// above the mean of the last `window` accepted steps. It fires only once the window is full
// (the warm-up), and only upwards. A spiking step's values never enter the window, so one spike
// does not widen the statistics enough to hide the next.
//
// The standard deviation is floored at 1e-3 x |mean|: a series that has become almost constant
// (a memorised batch) would otherwise flag its own rounding noise.
//
// Statistics are recomputed from the window in order, oldest first, in double precision, so a
// detector restored from its saved values (checkpoints, rollbacks) decides bit for bit as the
// one it was saved from.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd {

// The last `capacity` values of a series.
class RollingWindow {
public:
    explicit RollingWindow(size_t capacity = 128) : cap_(capacity) {}
    void push(double v);
    size_t size() const { return values_.size(); }
    size_t capacity() const { return cap_; }
    bool full() const { return values_.size() >= cap_; }
    double mean() const;
    double stddev() const;  // population standard deviation; 0 when empty
    double max() const;
    const std::vector<double>& values() const { return values_; }  // oldest first
    // The values as a JSON array (oldest first); from_json keeps the newest `capacity`.
    nlohmann::json to_json() const;
    void from_json(const nlohmann::json& j, const std::string& where);

private:
    size_t cap_;
    std::vector<double> values_;  // oldest first; a vector shift per push costs less than a spike report
};

struct SpikeThresholds {
    int window = 128;
    double z_loss = 6.0;  // 0: the loss is not watched
    double z_grad = 6.0;  // 0: the gradient norm is not watched
};

// One statistic's judgement of a value against its window.
struct SpikeTest {
    double value = 0, mean = 0, std = 0, z = 0;
    bool ready = false;  // the window is full
    bool fired = false;
};

struct SpikeVerdict {
    SpikeTest loss, grad;
    bool fired() const { return loss.fired || grad.fired; }
    std::vector<std::string> fired_on() const;
};

class SpikeDetector {
public:
    explicit SpikeDetector(const SpikeThresholds& t = {});
    // Judges a step's (all-reduced) loss and gradient norm without changing any state.
    SpikeVerdict check(double loss, double grad_norm) const;
    // Adds an accepted (non-spiking) step's values to the windows.
    void accept(double loss, double grad_norm);
    const SpikeThresholds& thresholds() const { return t_; }
    const RollingWindow& losses() const { return loss_; }

    nlohmann::json to_json() const;
    void from_json(const nlohmann::json& j, const std::string& where);

private:
    SpikeThresholds t_;
    RollingWindow loss_, grad_;
};

}  // namespace sixnd
