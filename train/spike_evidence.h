// What the trainer keeps about recent steps for loss spikes, and the pieces of a spike report
// (OUT/spikes/step-NNNNNNN.json; the format is in README "When the loss spikes"). The trainer
// gathers the numbers (collectives, device copies); the functions here only arrange them, so
// each report field is built in one place.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/shard_span.h"
#include "model/param_layout.h"
#include "train/spike_detector.h"

namespace sixnd {

// The recent history a rollback rewinds with the weights and a checkpoint carries: the
// detector's windows and the running means the reports compare a spike against. Windows only
// take accepted (non-spiking) steps, except `lr`, which takes every update applied.
struct SpikeHistory {
    SpikeHistory(const SpikeThresholds& t, int units, int layers);
    void accept(double loss, double grad_norm, const std::vector<double>& unit_norms, const std::vector<float>& attention_max);
    void applied(double lr, double scheduled_lr, bool injected);

    SpikeDetector detector;
    std::vector<RollingWindow> unit_grad;  // per unit: its gradient norm
    std::vector<RollingWindow> attention;  // per layer: the max pre-softmax logit of the step
    RollingWindow lr;                      // the learning rate of each update applied
    // The last update applied: it made the weights a spiking loss was measured on.
    double last_lr = -1, last_scheduled_lr = -1;
    bool last_injected = false;

    nlohmann::json to_json() const;
    void from_json(const nlohmann::json& j, const std::string& where);
};

// Once-per-run facts a rollback does not undo (a resume restores them): whether each injected
// fault has fired, and how many rollbacks the run has made.
struct SpikeRunState {
    bool lr_fired = false;
    int lr_left = 0;  // steps of the injected learning rate still to come
    bool junk_fired = false;
    int rollbacks = 0;
};

// The checkpoint file (spikes.json) holding both; parse throws Error naming `where`.
std::string spike_state_text(const SpikeHistory& h, const SpikeRunState& r);
void parse_spike_state(const std::string& text, const std::string& where, SpikeHistory& h, SpikeRunState& r);

nlohmann::json trigger_json(const SpikeVerdict& v, const SpikeThresholds& t);

struct LrFacts {
    double lr = 0;            // this step's (would-be) update
    double scheduled_lr = 0;  // the schedule's value for this step
    double base_lr = 0;
    std::string schedule;
    int warmup = 0;
    int step = 0, steps = 1;  // 1-based step, the schedule's length
    bool injected = false;    // an injected rate at this step or the update before it
};
// learning_rate: the rate, the schedule's place, and how far the rate at or just before the
// spike stood above the schedule (lr_ratio; 1 on schedule).
nlohmann::json learning_rate_json(const LrFacts& f, const SpikeHistory& h);

// attention_logits: this step's max per layer against the window's means; null when not measured.
nlohmann::json attention_json(const std::vector<float>& now, const SpikeHistory& h);

// Per unit partial sums one rank contributes (add them over ranks): [v_min, v_max,
// sum (w_after - w_before)^2, sum w_before^2] for each unit, over the elements that hold
// parameters. v_min ignores zeros (never-updated elements); with none it is +inf, v_max -1.
std::vector<double> unit_update_partials(const ParamLayout& layout, const std::vector<ShardSpan>& spans,
                                         const std::vector<float>& v, const std::vector<float>& w_before,
                                         const std::vector<float>& w_after);
// Combines every rank's partials (all_gather order) and the global per-unit gradient norms.
nlohmann::json units_json(const ParamLayout& layout, const std::vector<double>& unit_norms, const SpikeHistory& h,
                          const std::vector<double>& gathered_partials, int world);

struct RowEvidence {
    int rank = 0, micro = 0, row = 0;
    std::string shard;
    uint64_t offset = 0;
    double loss = 0, max_token_loss = 0;
    nlohmann::json replaced;  // for a junk row: the shard and offset it stood in for
};
nlohmann::json batch_json(int seq_len, const std::vector<RowEvidence>& rows, double loss, const SpikeHistory& h,
                          bool injected_junk);

// The report's path: OUT/spikes/step-NNNNNNN.json, or step-NNNNNNN-rK.json once the run has
// rolled back K times (a step rerun after a rollback may spike again: its report is another).
std::string spike_report_path(const std::string& out_dir, int step, int rollbacks);

}  // namespace sixnd
