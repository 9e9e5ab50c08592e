// One run's numbers, read back from its JSON Lines run log — the same numbers the ablation table
// and `sixnd report` show, so anyone can recompute them from the logs:
//   diverged          whether training stopped for good: at --max-bad-steps (non-finite or
//                     spiking steps in a row), at a spike after --max-rollbacks rollbacks, or
//                     on an update that made the parameters non-finite (a "stop" event with
//                     reason "max_bad_steps", "max_rollbacks" or "non_finite_parameters"), and
//                     was not resumed past it (no step record follows the stop in the log)
//   final_train_loss  loss of the last step record; null when the run diverged, or its last
//                     step came later and was skipped for a non-finite loss or gradient
//   val_loss, val_bpb the last evaluation's (the run's end has one), null where it was not
//                     finite or the run diverged: from the eval events and step records, by step
//                     (a skipped step's evaluation is in its event only)
//   tokens_per_s, mfu, hfu   mean over the step records, the first of each process (its
//                     warm-up: a resumed run's first step too) left out when there are others
//                     (null without any: a run that diverged at once)
//   peak_memory       per category (params, grads, ..., and "peak", the ledger's peak total):
//                     the largest value over the step records (rank 0's ledger)
//   comm_bytes        bytes sent by rank 0, summed over the step records
//   spikes            steps with a spike event
//   wall_clock_s      seconds spent in training steps: the sum of step_ms (start-up, evaluation
//                     and checkpoints left out)
// Only the records of the branch the run ended on count: a resumed run (a header after the
// first) logs again from the step after its checkpoint, and a rollback from the step after the
// one it went back to, so every record of those steps and later that came before (a killed
// run's last steps, a later branch left by a resume from an older checkpoint, the steps a
// rollback undid: their step records, evaluations, skips, spikes, samples, checkpoints) is
// dropped. A rollback and the spike that made it stay (they are why those steps were run again)
// until a resume from a checkpoint saved before them drops them too (by the log's order: one
// saved in the steps the rollback ran again keeps them, though its step comes before the
// spike's). Missing numbers are JSON null.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd {

struct RunMetrics {
    nlohmann::json header;              // the last header record (resolved config, model, device)
    std::map<int, double> step_loss;    // train loss per step
    // The last step the branch reached: a step record's, or a skipped step's or the stop's (a
    // run that ends on skipped steps ran them), 0 before any.
    int last_step = 0;
    std::string diverged_at;            // the reason of the stop that made it diverge ("" if not)
    // The log lines of the step and event records on that branch, as [first, last] ranges in
    // order (sixnd report draws those records, and only those).
    std::vector<std::pair<int, int>> branch_lines;
    nlohmann::json values;              // the metrics above, by name
};

// The metric names in table order (peak memory categories are nested under "peak_memory");
// "diverged", a yes or no, is counted, not averaged, so it is not among them.
const std::vector<std::string>& run_metric_names();

// Reads the log with read_run_log (train/run_log.h); throws Error(path, ...) also when it has no
// step record and did not diverge (one that diverged at its first step has none: its numbers
// are null), and names FILE:LINE of a record with a field out of range.
RunMetrics read_run_metrics(const std::string& log_path);

}  // namespace sixnd
