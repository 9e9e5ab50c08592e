// The five causes of a loss spike, ranked by the evidence of a spike report (OUT/spikes/
// step-NNNNNNN.json, laid out in README "When the loss spikes"), and the report's short text form.
//
// Each cause gets a score in [0, 1] from its own fields only; a field that is missing, null or
// of the wrong type counts as not measured (a cause with nothing measured scores 0 and says
// "not measured"). The rules, in the report's terms:
//   learning_rate    1 when learning_rate.injected, or lr / scheduled_lr (off the schedule) of
//                    2 or more (linear from 1); else 0.8 * (lr / recent_mean_lr - 1.5) / 2.5
//                    (a warm-up ramp alone stays under 2x its window mean); +0.2 within 20% of
//                    the warm-up's end, where the LR peaks.
//   attention_logits 0.8 * (max_ratio - 1.2) / 1.8 (3x the running mean: 0.8), +0.2 * (largest
//                    max logit - 30) / 70 (logits near 100 saturate the softmax).
//   data_state       1 when batch.injected_junk; else 0.8 * (batch loss / recent mean - 1) / 1.5,
//                    +0.2 * how far the excess over the recent mean sits in the top quarter of
//                    the rows rather than spread evenly (a few bad rows are a data signature)
//                    * (batch loss / recent mean - 1) / 0.5 (a batch near its recent mean has
//                    no excess worth placing).
//   optimizer_state  over units, the largest min(v, u, g): v = 1 for adam_v_min <= 1e-18 down to
//                    0 at 1e-12; u = (log10 update_ratio + 3) / 2 (1e-3: 0, 1e-1: 1);
//                    g = (grad_ratio - 1) / 3 — a collapsed second moment only matters where a
//                    large gradient now meets it and the update is large.
//   hardware_nondeterminism  1 when determinism.bitwise_equal is false (the same batch through
//                    the same weights gave another loss: every other number is suspect).
// Every part is clamped to [0, 1] before it is weighted; ties keep the order above.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace sixnd {

// The "causes" array: {cause, score, evidence, next} for each of the five, highest score first.
// `evidence` is one line with the numbers that decided the score; `next` the command line of
// the cause's next diagnostic, complete: the report's "run" object with the run's options and
// model (its "config" and "model", as the trainer records them), only the knob under test
// changed (placeholders in <> where the report does not say).
nlohmann::json rank_spike_causes(const nlohmann::json& report);

// A few lines for people: what fired, the LR and batch at the step, the determinism re-check and
// the ranked causes (the report's "causes" when present, else ranked here).
std::string spike_report_text(const nlohmann::json& report);

}  // namespace sixnd
