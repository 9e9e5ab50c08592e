// The training loop. For each step: world-many micro-batches of B x T per process until the
// global batch (--total-batch-tokens) is reached, each forward/backward accumulating into the
// gradients; then the global gradient norm (clipping), the NaN/Inf guard, the spike detector
// and its action (warn, skip the update, or roll back to an earlier state; each spike writes
// OUT/spikes/step-NNNNNNN.json), AdamW with the scheduled learning rate, the metrics record,
// periodic validation and checkpoints.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/recompute.h"
#include "dist/comm.h"
#include "train/optimizer.h"
#include "train/schedule.h"
#include "train/spike_options.h"

namespace sixnd {

class Tokenizer;

struct TrainOptions {
    std::string device = "auto";
    DType dtype = DType::bf16;
    AttentionKind attention = AttentionKind::flash;
    Recompute recompute = Recompute::none;
    int zero_stage = 0;
    uint64_t seed = 1337;

    std::string train_data;
    std::string val_data;
    bool shuffle = true;
    int batch = 4;
    int seq_len = 64;
    long long total_batch_tokens = 0;  // 0: one micro-batch per step

    int steps = 100;
    int stop_at = 0;  // stop (with a checkpoint) after this step; the schedule still spans `steps`
    Schedule schedule;
    OptimizerConfig optimizer;
    float grad_clip = 1.0f;

    std::string out_dir = "runs/latest";  // checkpoints go to <out_dir>/checkpoints
    bool overwrite = false;               // a fresh run may delete another run's checkpoints in out_dir
    int checkpoint_every = 0;
    int keep_last = 3;
    std::string resume;  // "", "latest" or a checkpoint directory
    // A resume may change what the checkpoint's data position depends on (--seq-len, the batch
    // tokens per step, --train-data, --shuffle, --seed).
    bool allow_resume_changes = false;
    // The model was asked for explicitly (--init/--model/--vocab-size/--max-seq-len): a resume
    // then refuses a checkpoint holding another model instead of silently using the checkpoint's.
    bool model_flags_given = false;
    std::string log;     // run log path; "" = none
    int eval_every = 0;
    int eval_batches = 4;
    std::string eval_task;  // HellaSwag-format JSONL scored at each evaluation (needs tokenizer)
    int max_bad_steps = 5;
    SpikeOptions spike;  // detection, --on-spike and fault injection
    double peak_tflops = 0;
    int profile = 0;                     // --profile N: per-op profile over N steps
    double price_per_device_hour = 0;    // for the bill; 0: no price
    std::string tokenizer;  // copied into checkpoints so `sixnd sample` can decode
    // A sample of sample_tokens tokens from <|endoftext|> every sample_every steps and at the
    // last (0: none), on stderr and in the log; needs the tokenizer and ZeRO 0-2.
    int sample_every = 0;
    int sample_tokens = 32;
    bool progress = true;
    // Tests only: called after each step's backward with the step (1-based) and this rank's first
    // gradient span (host memory on the CPU backend), to plant a non-finite gradient.
    std::function<void(int step, void* grads, size_t count)> test_gradient_hook;

    nlohmann::json to_json() const;
    // Throws Error naming the flag of the first value out of range; `world` is the number of
    // ranks (the batch tokens per step must split over them).
    void validate(int world) const;
    // Settings other than the default for something this run does not do (a Muon knob under
    // AdamW, a rollback knob without rollback...), each "--flag has no effect ...". Warned of,
    // not refused: one flag set for several runs (an ablation's variants, a config file kept
    // across optimizers) applies to some of them only. Defaults are left out, so that a run's
    // resolved options given back as flags (a spike report's next commands) run quietly.
    std::vector<std::string> inert_settings() const;
};

struct TrainResult {
    int steps_done = 0;
    int rollbacks = 0;  // --on-spike rollback: how many this process made
    double last_loss = 0;  // the last step's as the run log records it, NaN when it was not finite
    int skipped_at_end = 0;  // steps skipped in a row at the end (non-finite or spikes)
    float last_val_loss = -1;  // -1 without an evaluation, NaN when the last was not finite
    double last_val_bpb = -1;  // validation bits per byte: the same, and -1 without --tokenizer
    std::string last_checkpoint;
    std::vector<float> losses;  // one per step run in this process (a rollback's rerun steps again)
};

// The token a --sample-every sample starts from: `tok`'s <|endoftext|> (read from `path`);
// throws Error naming --sample-every where it has none.
uint32_t sample_start_token(const Tokenizer& tok, const std::string& path);

// Trains from `params` (in ParamLayout(config) order, default alignment) or from the checkpoint
// named by opts.resume, on the ranks of `comm` (null: one process). Throws Error on bad input or
// when --max-bad-steps is exceeded. params is freed once the model holds it: moved in, its 4
// bytes a parameter do not stay beside the run's own states.
TrainResult train(const TrainOptions& opts, const GPTConfig& config, std::vector<float> params, Comm* comm = nullptr);

}  // namespace sixnd
