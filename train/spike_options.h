// What a run does about loss spikes (--on-spike and its knobs), and the faults it can plant on
// purpose so that each path can be practised and tested (--inject-lr-spike, --inject-junk-batch).
// Steps here are 1-based, as in the run log.
#pragma once
#include <cstdint>
#include <string>

#include "train/spike_detector.h"

namespace sixnd {

enum class SpikeAction { warn, skip, rollback };
SpikeAction parse_spike_action(const std::string& s);  // throws Error naming --on-spike
const char* spike_action_name(SpikeAction a);

// --inject-lr-spike STEP:FACTOR[:STEPS]: the learning rate times FACTOR for STEPS steps from
// STEP on. step 0: off.
struct LrInjection {
    int step = 0;
    double factor = 1;
    int steps = 1;
};
// Parses "STEP:FACTOR[:STEPS]"; throws Error naming --inject-lr-spike. Ranges are checked by
// TrainOptions::validate.
LrInjection parse_lr_injection(const std::string& spec);
std::string lr_injection_text(const LrInjection& l);  // "" when off

struct SpikeOptions {
    SpikeThresholds detect;
    SpikeAction action = SpikeAction::warn;
    int rollback_steps = 10;         // roll back to a state at least this many steps before the spike
    int rollback_skip_batches = 10;  // step batches skipped past the spike's, besides the rerun ones
    int snapshot_every = 0;          // in-memory snapshots for rollback every N steps (0: checkpoints only)
    int max_rollbacks = 3;           // a run that needs more stops
    LrInjection inject_lr;
    int inject_junk_step = 0;        // 0: off
};

// Row `row` of a junk batch (--inject-junk-batch): n uniform random tokens in [0, vocab), drawn
// from the seed, the step and the row's index in the global batch (micro-step x world x B +
// rank x B + b), so that every world size plants the same tokens.
void junk_row(uint64_t seed, int step, uint64_t row, int vocab, int32_t* out, size_t n);

}  // namespace sixnd
