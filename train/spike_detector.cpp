#include "train/spike_detector.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace sixnd {

using nlohmann::json;

void RollingWindow::push(double v) {
    if (cap_ == 0) return;
    if (values_.size() >= cap_) values_.erase(values_.begin(), values_.begin() + static_cast<long>(values_.size() - cap_ + 1));
    values_.push_back(v);
}

double RollingWindow::mean() const {
    if (values_.empty()) return 0;
    double s = 0;
    for (double v : values_) s += v;
    return s / static_cast<double>(values_.size());
}

double RollingWindow::stddev() const {
    if (values_.empty()) return 0;
    const double m = mean();
    double s = 0;
    for (double v : values_) s += (v - m) * (v - m);
    return std::sqrt(s / static_cast<double>(values_.size()));
}

double RollingWindow::max() const { return values_.empty() ? 0 : *std::max_element(values_.begin(), values_.end()); }

json RollingWindow::to_json() const { return values_; }

void RollingWindow::from_json(const json& j, const std::string& where) {
    if (!j.is_array()) throw Error(where, "a spike-detector window is not an array");
    values_.clear();
    for (const auto& v : j) {
        if (!v.is_number() || !std::isfinite(v.get<double>())) throw Error(where, "a spike-detector window holds a non-number");
        push(v.get<double>());
    }
}

std::vector<std::string> SpikeVerdict::fired_on() const {
    std::vector<std::string> on;
    if (loss.fired) on.push_back("loss");
    if (grad.fired) on.push_back("grad_norm");
    return on;
}

namespace {

SpikeTest judge(const RollingWindow& w, double value, double z) {
    SpikeTest t;
    t.value = value;
    t.mean = w.mean();
    t.std = std::max(w.stddev(), 1e-3 * std::fabs(t.mean));
    t.ready = w.full();
    t.z = t.std > 0 ? (value - t.mean) / t.std : 0;
    t.fired = z > 0 && t.ready && t.std > 0 && t.z > z;
    return t;
}

}  // namespace

SpikeDetector::SpikeDetector(const SpikeThresholds& t)
    : t_(t), loss_(static_cast<size_t>(t.window)), grad_(static_cast<size_t>(t.window)) {}

SpikeVerdict SpikeDetector::check(double loss, double grad_norm) const {
    return SpikeVerdict{judge(loss_, loss, t_.z_loss), judge(grad_, grad_norm, t_.z_grad)};
}

void SpikeDetector::accept(double loss, double grad_norm) {
    loss_.push(loss);
    grad_.push(grad_norm);
}

json SpikeDetector::to_json() const { return json{{"loss", loss_.to_json()}, {"grad_norm", grad_.to_json()}}; }

void SpikeDetector::from_json(const json& j, const std::string& where) {
    if (!j.is_object() || !j.contains("loss") || !j.contains("grad_norm"))
        throw Error(where, "the spike detector's state lacks its loss or grad_norm window");
    loss_.from_json(j.at("loss"), where);
    grad_.from_json(j.at("grad_norm"), where);
}

}  // namespace sixnd
