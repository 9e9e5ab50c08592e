#include "train/profile.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <vector>

#include "core/log.h"

namespace sixnd {

using nlohmann::json;

// The ZeRO hooks timed as communication, less the ops they run (stage 2's gradient add).
class StepProfiler::Hooks final : public UnitHooks {
public:
    Hooks(StepProfiler& p, UnitHooks& inner) : p_(p), inner_(inner) {}
    void before_forward(int u) override { auto s = p_.region(ProfileRegion::comm); inner_.before_forward(u); }
    void after_forward(int u) override { auto s = p_.region(ProfileRegion::comm); inner_.after_forward(u); }
    void before_backward(int u) override { auto s = p_.region(ProfileRegion::comm); inner_.before_backward(u); }
    void after_backward(int u) override { auto s = p_.region(ProfileRegion::comm); inner_.after_backward(u); }

private:
    StepProfiler& p_;
    UnitHooks& inner_;
};

Backend StepProfiler::wrap(Backend be, int steps) {
    if (steps > 0) be.ops = std::make_unique<ProfilingOps>(std::move(be.ops));
    return be;
}

StepProfiler::StepProfiler(Backend& be, int steps)
    : ops_(steps > 0 ? dynamic_cast<ProfilingOps*>(be.ops.get()) : nullptr), steps_(steps) {}

StepProfiler::~StepProfiler() = default;

// The first step is left out whenever another follows, also where --profile N covers the whole
// run: with its allocations, --steps 3 --profile 3 read several times the later steps' ms/step.
void StepProfiler::window(int first, int last) {
    first_ = last - first > 1 ? first + 1 : first;
    last_ = first_ + std::min(last - first_, steps_);  // first_ + steps_ could pass INT_MAX
}

UnitHooks* StepProfiler::hooks(UnitHooks* inner) {
    if (!ops_) return inner;
    hooks_ = std::make_unique<Hooks>(*this, *inner);
    return hooks_.get();
}

void StepProfiler::begin_step(int step) {
    active_ = ops_ && step >= first_ && step < last_;
    if (!ops_) return;
    ops_->set_enabled(active_);
    if (!active_) return;
    ops_->reset();
    std::fill(std::begin(step_region_s_), std::end(step_region_s_), 0.0);
}

void StepProfiler::end_step(double step_seconds) {
    if (!active_) return;
    steps_done_++;
    step_s_ += step_seconds;
    for (const auto& [key, st] : ops_->stats()) {
        OpStats& sum = stats_[key];
        sum.op = st.op;
        sum.calls += st.calls;
        sum.seconds += st.seconds;
        sum.flops += st.flops;
        sum.bytes += st.bytes;
    }
    for (int r = 0; r < static_cast<int>(ProfileRegion::count); r++) region_s_[r] += step_region_s_[r];
    active_ = false;
    ops_->set_enabled(false);
}

StepProfiler::Scope::Scope(StepProfiler* p, ProfileRegion r) : p_(p), r_(r) {
    if (!p_) return;
    op_s0_ = p_->ops_->seconds();
    t0_ = std::chrono::steady_clock::now();
}

// seconds() waits for the device first, so the region's host time includes its device work
// (a collective, an op) on a GPU too.
StepProfiler::Scope::~Scope() {
    if (!p_) return;
    const double op_s = p_->ops_->seconds() - op_s0_;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    p_->add_region(r_, s - op_s);
}

json StepProfiler::report(const Roof& roof, const StepFlops& f) const {
    if (!ops_) return nullptr;
    if (steps_done_ == 0) {
        const std::string why = first_ < last_ ? "steps " + std::to_string(first_ + 1) + "-" + std::to_string(last_) +
                                                     " were each skipped or rolled back"
                                               : "the run trained no steps";
        log_warn("--profile: no profile: " + why);
        return nullptr;
    }
    const double n = steps_done_, step_s = step_s_ / n, ridge = roof.ridge();
    std::vector<json> rows;
    double op_flops = 0, booked = 0;
    for (const auto& [key, st] : stats_) {
        const double s = st.seconds / n, fl = st.flops / n, by = st.bytes / n;
        const double intensity = by > 0 ? fl / by : 0;
        const bool compute = intensity >= ridge;
        const double roof_flops = compute ? roof.peak_flops : intensity * roof.mem_bw;
        const double fraction = s <= 0 ? 0 : compute || fl > 0 ? fl / s / roof_flops : by / s / roof.mem_bw;
        rows.push_back({{"name", key},
                        {"op", st.op},
                        {"calls_per_step", st.calls / n},
                        {"seconds_per_step", s},
                        {"flops_per_step", fl},
                        {"bytes_per_step", by},
                        {"intensity", intensity},
                        {"bound", compute ? "compute" : "memory"},
                        {"achieved_flops_per_s", s > 0 ? fl / s : 0},
                        {"achieved_bytes_per_s", s > 0 ? by / s : 0},
                        {"roof_fraction", fraction}});
        op_flops += fl;
        booked += s;
    }
    const char* names[] = {"data loading", "optimizer host work", "communication (ZeRO hooks, parameter all-gather)"};
    const char* bounds[] = {"host", "host", "communication"};
    for (int r = 0; r < static_cast<int>(ProfileRegion::count); r++) {
        const double s = region_s_[r] / n;
        rows.push_back({{"name", names[r]}, {"op", names[r]}, {"seconds_per_step", s}, {"bound", bounds[r]}});
        booked += s;
    }
    rows.push_back({{"name", "other (untimed: loss and norm reductions, zeroing, logging)"},
                    {"op", "other"},
                    {"seconds_per_step", step_s - booked},
                    {"bound", "host"}});
    std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
        return a.at("seconds_per_step").get<double>() > b.at("seconds_per_step").get<double>();
    });
    for (auto& r : rows) r["share"] = r.at("seconds_per_step").get<double>() / step_s;
    const double denom = step_s * f.world * f.peak_flops;
    const double mfu = f.model / denom, hfu = f.hardware / denom;
    auto g = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.3g", v);
        return std::string(b);
    };
    json why = json::array();
    why.push_back("HFU - MFU: the recomputed forward FLOPs (--recompute full re-runs each block's forward up to the MLP activation), " +
                  g(f.hardware - f.model) + " FLOPs/step on top of the model's " + g(f.model));
    why.push_back("the ops' own FLOPs (" + g(op_flops * f.world) + "/step, from their shapes) count what neither does: "
                  "the LM head over the padded vocabulary, causal attention's actual work, softmax, layernorm, GELU, "
                  "residual and optimizer arithmetic, selective recompute");
    return {{"steps", steps_done_},
            {"first_step", first_ + 1},
            {"step_s", step_s},
            {"rows_booked_s", booked},
            {"ops_and_regions_fraction_of_step", booked / step_s},
            {"peak_flops", roof.peak_flops},
            {"peak_source", roof.peak_source},
            {"mem_bw", roof.mem_bw},
            {"bw_source", roof.bw_source},
            {"ridge_flop_per_byte", ridge},
            {"model_flops_per_step", f.model},
            {"hw_flops_per_step", f.hardware},
            {"op_flops_per_step_per_rank", op_flops},
            {"mfu", mfu},
            {"hfu", hfu},
            {"mfu_vs_hfu", why},
            {"rows", rows}};
}

std::string StepProfiler::table(const json& rep, int top) {
    char line[400];
    std::string out;
    std::snprintf(line, sizeof line,
                  "profile: %d steps from step %d, %.1f ms/step; ridge %.1f FLOP/byte (peak %.3g FLOP/s [%s] / bandwidth %.3g B/s [%s])\n",
                  rep.at("steps").get<int>(), rep.at("first_step").get<int>(), rep.at("step_s").get<double>() * 1e3,
                  rep.at("ridge_flop_per_byte").get<double>(), rep.at("peak_flops").get<double>(),
                  rep.at("peak_source").get<std::string>().c_str(), rep.at("mem_bw").get<double>(),
                  rep.at("bw_source").get<std::string>().c_str());
    out += line;
    std::snprintf(line, sizeof line, "%-52s %9s %6s %7s %10s %10s  %-13s %6s\n", "op", "ms/step", "share", "calls", "GFLOP", "FLOP/B",
                  "bound", "roof%");
    out += line;
    // Significant digits: a number cut to its first characters read 12345678 as 1234567.
    const auto five_digits = [](double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.5g", v);
        return std::string(b);
    };
    int k = 0;
    for (const json& r : rep.at("rows")) {
        if (k++ >= top) break;
        const bool op = r.contains("intensity");
        std::snprintf(line, sizeof line, "%-52.52s %9.3f %5.1f%% %7s %10s %10s  %-13s %6s\n", r.at("name").get<std::string>().c_str(),
                      r.at("seconds_per_step").get<double>() * 1e3, r.at("share").get<double>() * 100,
                      op ? std::to_string(static_cast<int>(r.at("calls_per_step").get<double>())).c_str() : "",
                      op ? five_digits(r.at("flops_per_step").get<double>() / 1e9).c_str() : "",
                      op ? five_digits(r.at("intensity").get<double>()).c_str() : "",
                      r.at("bound").get<std::string>().c_str(),
                      op ? five_digits(r.at("roof_fraction").get<double>() * 100).c_str() : "");
        out += line;
    }
    std::snprintf(line, sizeof line, "booked rows %.1f%% of the step; MFU %.2f%%, HFU %.2f%%\n",
                  rep.at("ops_and_regions_fraction_of_step").get<double>() * 100, rep.at("mfu").get<double>() * 100,
                  rep.at("hfu").get<double>() * 100);
    out += line;
    for (const json& w : rep.at("mfu_vs_hfu")) out += "  " + w.get<std::string>() + "\n";
    out += "  roof% over 100: the op's data stayed in cache (the memory roof is DRAM bandwidth), or the peak was measured low\n";
    return out;
}

}  // namespace sixnd
