#include "cli/train_flags.h"

namespace sixnd::cli {

void add_train_flags(CLI::App& app, TrainFlags& f) {
    app.add_option("--config", f.config, "read flags from a file: key = value lines, the flags' names, optionally under [train]");
    add_model_flags(app, f.model);
    TrainOptions& o = f.options;
    app.add_option("--recompute", f.recompute, "none, selective or full")->capture_default_str();
    app.add_option("--zero", o.zero_stage, "ZeRO stage 0-3 (under mpirun)")->capture_default_str();
    app.add_option("--train-data", o.train_data, "glob of llm.c token shards, or DIR/manifest.json of sixnd data prepare")->required();
    app.add_option("--val-data", o.val_data, "glob of validation shards, or DIR/manifest.json:val");
    app.add_option("--shuffle", f.shuffle, "on or off")->capture_default_str();
    app.add_option("--batch", o.batch, "micro-batch size B per process")->capture_default_str();
    app.add_option("--seq-len", o.seq_len, "sequence length T")->capture_default_str();
    app.add_option("--total-batch-tokens", o.total_batch_tokens, "tokens per optimizer step (gradient accumulation); default B*T*ranks");
    app.add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
    app.add_option("--stop-at", o.stop_at, "stop after this step with a checkpoint; the schedule still spans --steps");
    app.add_option("--lr", o.schedule.lr, "peak learning rate")->capture_default_str();
    app.add_option("--schedule", f.schedule, "constant, cosine or wsd")->capture_default_str();
    app.add_option("--warmup", o.schedule.warmup, "linear warm-up steps")->capture_default_str();
    app.add_option("--final-lr-frac", o.schedule.final_frac,
                   "where cosine and wsd decay to, as a fraction of --lr (reached one step past the last)")->capture_default_str();
    app.add_option("--weight-decay", o.optimizer.weight_decay, "decoupled weight decay (matrices only)")->capture_default_str();
    app.add_option("--beta1", o.optimizer.beta1)->capture_default_str();
    app.add_option("--beta2", o.optimizer.beta2)->capture_default_str();
    app.add_option("--eps", o.optimizer.eps)->capture_default_str();
    app.add_option("--optimizer", f.optimizer, "adamw, or muon: Muon for the blocks' matrices, AdamW for the rest")->capture_default_str();
    app.add_option("--muon-lr", o.optimizer.muon_lr, "Muon's peak learning rate (scheduled like --lr)")->capture_default_str();
    app.add_option("--muon-momentum", o.optimizer.muon_momentum, "Muon's Nesterov momentum")->capture_default_str();
    app.add_option("--muon-weight-decay", o.optimizer.muon_weight_decay, "Muon's decoupled weight decay")->capture_default_str();
    app.add_option("--grad-clip", o.grad_clip, "global gradient-norm clip (0 = off)")->capture_default_str();
    app.add_option("--master-weights", f.master, "keep FP32 master weights for BF16 parameters: on or off")->capture_default_str();
    app.add_option("--out", o.out_dir, "run directory (checkpoints go to OUT/checkpoints; locked while the run writes it)")->capture_default_str();
    app.add_flag("--overwrite", o.overwrite, "start a fresh run in an --out holding another run's checkpoints, deleting them, or on a --log of a run into another --out, replacing it");
    app.add_option("--checkpoint-every", o.checkpoint_every, "save every N steps (0: only at the end)")->capture_default_str();
    app.add_option("--keep-last", o.keep_last, "checkpoints to keep (0: all)")->capture_default_str();
    app.add_option("--resume", o.resume, "latest, or a checkpoint directory");
    app.add_flag("--allow-resume-changes", o.allow_resume_changes,
                 "resume although --seq-len, the tokens per step, --train-data, --shuffle or --seed differ from the checkpoint's");
    app.add_option("--log", o.log, "JSON Lines run log");
    app.add_option("--eval-every", o.eval_every, "validation loss every N steps (needs --val-data or --eval-task)")->capture_default_str();
    app.add_option("--eval-batches", o.eval_batches, "validation batches per evaluation")->capture_default_str();
    app.add_option("--eval-task", o.eval_task, "HellaSwag-format JSONL scored (acc, acc_norm) at each --eval-every (needs --tokenizer)");
    app.add_option("--sample-every", o.sample_every,
                   "every N steps and at the last, a sample from <|endoftext|>, shown and logged (needs --tokenizer; "
                   "--zero 0-2; 0: none)")
        ->capture_default_str();
    app.add_option("--sample-tokens", o.sample_tokens, "tokens per --sample-every sample (at most the context: more is warned of)")->capture_default_str();
    app.add_option("--max-bad-steps", o.max_bad_steps, "stop after this many non-finite steps in a row")->capture_default_str();
    app.add_option("--spike-window", o.spike.detect.window, "loss-spike detection: steps in the rolling window (it fires once the window is full)")->capture_default_str();
    app.add_option("--spike-z-loss", o.spike.detect.z_loss, "a loss this many standard deviations above the window's mean is a spike (0: off)")->capture_default_str();
    app.add_option("--spike-z-grad", o.spike.detect.z_grad, "a gradient norm this many standard deviations above the window's mean is a spike (0: off)")->capture_default_str();
    app.add_option("--on-spike", f.on_spike, "warn (report only), skip (drop the update) or rollback (to an earlier state, skipping batches)")->capture_default_str();
    app.add_option("--rollback-steps", o.spike.rollback_steps, "roll back to the newest state at least this many steps before the spike")->capture_default_str();
    app.add_option("--rollback-skip-batches", o.spike.rollback_skip_batches, "after a rollback, also skip this many batches past the spike's")->capture_default_str();
    app.add_option("--snapshot-every", o.spike.snapshot_every, "keep an in-memory state to roll back to every N steps (0: roll back to checkpoints on disk)")->capture_default_str();
    app.add_option("--max-rollbacks", o.spike.max_rollbacks, "stop the run at a spike after this many rollbacks")->capture_default_str();
    app.add_option("--inject-lr-spike", f.inject_lr, "fault injection: STEP:FACTOR[:STEPS] multiplies the learning rate by FACTOR for STEPS steps (default 1) from STEP");
    app.add_option("--inject-junk-batch", o.spike.inject_junk_step, "fault injection: replace step STEP's batch by uniform random tokens");
    app.add_option("--peak-tflops", o.peak_tflops, "override the peak TFLOP/s used for MFU");
    app.add_option("--profile", o.profile, "time every op over N steps (after the first): roofline table, OUT/profile.json");
    app.add_option("--price-per-device-hour", o.price_per_device_hour, "dollars per device-hour, for the bill every run ends with");
    app.add_option("--tokenizer", o.tokenizer, "sixnd tokenizer file the shards were made with (stored in checkpoints)");
    app.add_flag("--check", f.check_only, "check the flags (ranges, combinations, the model they make, the --out and --log paths), then exit without reading data or checkpoints or writing anything");
}

}  // namespace sixnd::cli
