// `sixnd train --profile N`: where a step's time goes. Over N steps (after the first, which
// allocates; less any skipped or rolled back) every op is timed through a ProfilingOps
// decorator and booked with its FLOPs and bytes from its shapes; the time outside ops is
// booked as rows of its own — data loading, the
// ZeRO hooks' communication, the optimizer's host work, the parameter all-gather after the
// update — and whatever is left untimed is shown as "other", so the rows add up to the measured
// step. Each row is classified against the device's roofline: an op whose arithmetic intensity
// (FLOP/byte) is above the ridge point (peak / bandwidth) is compute-bound, below it
// memory-bound, and its achieved fraction of that roof is reported; communication and host rows
// are labelled as such. The step's MFU and HFU and what separates them close the report, which
// goes to stderr as a table and to OUT/profile.json.
#pragma once
#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/unit_hooks.h"
#include "model/backend.h"
#include "model/profiling_ops.h"
#include "train/profile_roof.h"

namespace sixnd {

enum class ProfileRegion { data, optimizer, comm, count };

class StepProfiler {
public:
    // With steps > 0 the backend's ops are replaced by a ProfilingOps around them.
    static Backend wrap(Backend be, int steps);

    // be: the (wrapped) backend.
    StepProfiler(Backend& be, int steps);
    ~StepProfiler();
    // Profiles at most `steps` steps of the run's [first, last), from first + 1 unless first is
    // the only one, so that allocation and warm-up stay out of it.
    void window(int first, int last);
    bool enabled() const { return ops_ != nullptr; }

    // The hooks the model should call: a timing wrapper around `inner`, or inner itself.
    UnitHooks* hooks(UnitHooks* inner);

    void begin_step(int step);
    void end_step(double step_seconds);

    // Times a region of a profiled step, exclusive of the ops run inside it.
    class Scope {
    public:
        Scope(StepProfiler* p, ProfileRegion r);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        StepProfiler* p_;
        ProfileRegion r_;
        double op_s0_ = 0;
        std::chrono::steady_clock::time_point t0_;
    };
    Scope region(ProfileRegion r) { return Scope(active_ ? this : nullptr, r); }

    struct StepFlops {
        double model = 0, hardware = 0;  // per step, all ranks together
        int world = 1;
        double peak_flops = 0;  // what MFU/HFU are against (the run log's peak; on a CPU not the roof)
    };
    // Whether a profiled step has ended (a run stopped before that has no profile to write).
    bool profiled_any() const { return steps_done_ > 0; }
    // The report (null when not profiling, or, with a warning, when no profiled step ended);
    // `roof` is the device's, `flops` the counter's.
    nlohmann::json report(const Roof& roof, const StepFlops& flops) const;
    static std::string table(const nlohmann::json& report, int top = 15);

private:
    class Hooks;
    ProfilingOps* ops_ = nullptr;
    std::unique_ptr<Hooks> hooks_;
    int steps_ = 0, first_ = 0, last_ = 0;
    bool active_ = false;
    int steps_done_ = 0;
    double step_s_ = 0;
    // The ended steps' ops and regions, and the regions of the step in flight (its ops are in
    // ops_): a step skipped or rolled back never ends, and what it booked (an evaluation too) is
    // dropped at the next begin_step, so that the rows are the ended steps' own.
    std::map<std::string, OpStats> stats_;
    double region_s_[static_cast<int>(ProfileRegion::count)] = {};
    double step_region_s_[static_cast<int>(ProfileRegion::count)] = {};
    void add_region(ProfileRegion r, double s) { step_region_s_[static_cast<int>(r)] += s; }
};

}  // namespace sixnd
