// `sixnd replay`: PaLM's data x state ablation of a loss spike. From the batch rows a spike
// report names (shard + token offset, seq_len + 1 tokens each) it measures forward losses:
//   (a) the spike rows through the checkpoint before the spike,
//   (b) N other batches of as many rows from the same checkpoint (rows drawn from --train-data
//       by the seed, never overlapping a spike row; data holding fewer disjoint rows than the
//       draws is refused: its baseline would be copies of a few rows, without a spread),
//   (c) the spike rows through an earlier checkpoint, with the same N other batches as its
//       baseline,
// and names a verdict. A batch's loss is the mean of its rows' losses (each row forwarded alone,
// T tokens, so every row weighs the same).
//
// The rule (replay_verdict). x "spikes" above a baseline of mean m and standard deviation s
// when x > m + max(sigmas * s, margin * |m|) (defaults 3 and 0.1: three batch-to-batch standard
// deviations, and never less than 10% of the loss, as a handful of batches can show a tiny s).
//   (a) spikes above (b):   (c) spikes above its baseline -> data (the rows are bad from any
//                           state), else -> interaction (the rows meet this state; PaLM's case);
//   (a) does not spike above (b): when the run's loss before the spike is known (the report's
//                           trigger.loss_mean, else batch.recent_loss_mean) and both (a) and (b)'s
//                           mean spike above it (margin only: the run's own spread is not
//                           comparable to a batch mean's), and (b)'s mean is not below (c)'s
//                           baseline (a run still learning had a higher loss at any older
//                           checkpoint: that state is older, not damaged) -> state (everything is
//                           high from this state), else -> not_reproducible.
// An earlier checkpoint whose baseline is within 10% of ln(vocab) has learnt too little for any
// batch to stand out from it (its (c) cannot spike): the replay warns and names the flag.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd {

struct CheckpointMeta;

struct ReplayRule {
    double sigmas = 3.0;
    double margin = 0.1;
};

// The loss above which x counts as a spike over a baseline of `mean` and `std`.
double spike_threshold(double mean, double std, const ReplayRule& rule);

struct ReplayLosses {
    double spike = 0;                  // (a)
    double others_mean = 0, others_std = 0;  // (b)
    double earlier_spike = 0;          // (c)
    double earlier_others_mean = 0, earlier_others_std = 0;  // (c)'s baseline
    double reference = 0;              // the run's loss before the spike; NaN when unknown
};

// "data", "state", "interaction" or "not_reproducible", by the rule above.
std::string replay_verdict(const ReplayLosses& l, const ReplayRule& rule = {});

// What the replay reads from a spike report.
struct SpikeRow {
    std::string shard;
    uint64_t offset = 0;
    double loss = 0;  // the row's loss in the run (the report's); NaN when the report has none
};
struct SpikeReportRows {
    long long step = 0;
    int seq_len = 0;
    std::vector<SpikeRow> rows;
    double reference = 0;             // NaN when the report has none
    std::string checkpoint_earlier;   // run.checkpoint_earlier, "" when null
    nlohmann::json run;               // the report's "run" object ({} when none): what the run was
};
// Throws Error naming the file and the fault (not JSON, no batch rows, a malformed row).
SpikeReportRows read_spike_report(const std::string& path);

struct ReplayOptions {
    std::string checkpoint, earlier_checkpoint, spike_report, train_data;
    std::string device = "auto";
    int other_batches = 8;
    uint64_t seed = 1337;
};

// Refuses (Error naming --checkpoint, the report and the fault) a checkpoint that cannot be of
// the report's run: another run id than the checkpoints the report names (when they can be
// read), another dtype (a resume keeps it), another --seed or --shuffle (a resume keeps them
// unless --allow-resume-changes), or a spike step at or before the checkpoint's.
void check_checkpoint_of_report(const CheckpointMeta& ck, const std::string& ck_dir, const SpikeReportRows& rep,
                                const std::string& report_path);

// Runs (a), (b) and (c) and returns the numbers and the verdict as one JSON object:
// verdict, step, rows, seq_len, other_batches, seed, device, rule, reference_loss, and for
// "checkpoint" and "earlier": dir, step, spike_loss, row_losses, others_mean, others_std,
// threshold, spikes; and run_row_loss_diff, the largest |replayed - the run's| loss of a spike
// row when --checkpoint is at the step just before the spike and the report has the rows' losses
// (else null). A row's loss is the mean of its tokens' losses summed in double, as the trainer
// writes it, so from that checkpoint on the same build it is the run's, bit for bit; a larger
// difference than kReplayRowTolerance (relative) is warned: that checkpoint is not the state the
// spike saw (rewritten after a rollback, or resumed with changes), or the report was edited.
// A row whose loss is not finite is an Error naming the checkpoint: no verdict rests on it; so
// is a spike row whose shard holds other tokens than the run's shard of that name (the
// checkpoint's data record) held, naming the report. Progress goes to stderr (core/progress_line.h).
nlohmann::json replay_spike(const ReplayOptions& o);

// Rounding across devices and builds stays well below it: a row's loss is a mean over T tokens.
constexpr double kReplayRowTolerance = 1e-3;

}  // namespace sixnd
