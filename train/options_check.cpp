// TrainOptions::validate: every numeric knob of a run checked once, before anything is built,
// for the command line and for library callers alike; the error names the flag and the range.
#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "core/printable.h"
#include "tokenizer/utf8.h"
#include "train/trainer.h"

namespace sixnd {

namespace {

void require(bool ok, const char* flag, const std::string& what) {
    if (!ok) throw Error(flag, what);
}

// The run log, the checkpoints' meta.json and the closing summary record these paths as JSON
// text, which cannot hold other bytes: refused before the run, not at its first record or save.
void require_utf8(const std::string& path, const char* flag) {
    require(valid_utf8(path), flag,
            "'" + printable(path) + "' is not valid UTF-8, which the run log and checkpoints record as JSON text: rename it");
}

template <typename T>
std::string got(T v) {
    std::ostringstream s;
    s << v;
    return ", got " + s.str();
}

// Far beyond any real run, and small enough that products of sizes cannot overflow.
constexpr long long kMaxSide = 1 << 20;          // --batch, --seq-len, micro-steps per step
constexpr long long kMaxMicroTokens = 1LL << 31;  // B x T of one micro-batch (int32 token buffers)

}  // namespace

void TrainOptions::validate(int world) const {
    require(!train_data.empty(), "--train-data", "is required");
    require(eval_task.empty() || !tokenizer.empty(), "--eval-task", "needs --tokenizer to encode the items");
    require(!out_dir.empty(), "--out", "is empty; name the run directory");
    // The run holds OUT/.lock while it runs, so a log there would be reported as another run's.
    const std::filesystem::path lock = std::filesystem::path(out_dir) / ".lock";
    require(log.empty() || std::filesystem::path(log).lexically_normal() != lock.lexically_normal(), "--log",
            "is the run directory's lock file (" + lock.string() + "); name another file");
    for (const auto& [path, flag] : {std::pair{&train_data, "--train-data"}, {&val_data, "--val-data"}, {&out_dir, "--out"},
                                      {&log, "--log"}, {&tokenizer, "--tokenizer"}, {&eval_task, "--eval-task"}})
        require_utf8(*path, flag);
    require(steps > 0, "--steps", "must be positive" + got(steps));
    require(std::isfinite(schedule.lr) && schedule.lr > 0, "--lr", "must be a finite number > 0" + got(schedule.lr));
    require(schedule.warmup >= 0, "--warmup", "must be 0 or more" + got(schedule.warmup));
    require(schedule.final_frac >= 0 && schedule.final_frac <= 1, "--final-lr-frac",
            "must be in [0, 1]" + got(schedule.final_frac));
    require(optimizer.beta1 >= 0 && optimizer.beta1 < 1, "--beta1", "must be in [0, 1)" + got(optimizer.beta1));
    require(optimizer.beta2 >= 0 && optimizer.beta2 < 1, "--beta2", "must be in [0, 1)" + got(optimizer.beta2));
    require(std::isfinite(optimizer.eps) && optimizer.eps > 0, "--eps", "must be a finite number > 0" + got(optimizer.eps));
    require(std::isfinite(optimizer.weight_decay) && optimizer.weight_decay >= 0, "--weight-decay",
            "must be a finite number >= 0" + got(optimizer.weight_decay));
    require(std::isfinite(optimizer.muon_lr) && optimizer.muon_lr > 0, "--muon-lr", "must be a finite number > 0" + got(optimizer.muon_lr));
    require(optimizer.muon_momentum >= 0 && optimizer.muon_momentum < 1, "--muon-momentum",
            "must be in [0, 1)" + got(optimizer.muon_momentum));
    require(std::isfinite(optimizer.muon_weight_decay) && optimizer.muon_weight_decay >= 0, "--muon-weight-decay",
            "must be a finite number >= 0" + got(optimizer.muon_weight_decay));
    require(std::isfinite(grad_clip) && grad_clip >= 0, "--grad-clip", "must be a finite number >= 0 (0: off)" + got(grad_clip));
    require(checkpoint_every >= 0, "--checkpoint-every", "must be 0 (only at the end) or more" + got(checkpoint_every));
    require(keep_last >= 0, "--keep-last", "must be 0 (keep all) or more" + got(keep_last));
    require(stop_at >= 0 && stop_at <= steps, "--stop-at",
            "must be between 0 (off) and --steps (" + std::to_string(steps) + ")" + got(stop_at));
    require(eval_every >= 0, "--eval-every", "must be 0 (off) or more" + got(eval_every));
    require(eval_every == 0 || !val_data.empty() || !eval_task.empty(), "--eval-every", "needs --val-data or --eval-task");
    require(sample_every >= 0, "--sample-every", "must be 0 (off) or more" + got(sample_every));
    require(sample_tokens >= 1, "--sample-tokens", "must be positive" + got(sample_tokens));
    require(sample_every == 0 || !tokenizer.empty(), "--sample-every",
            "needs --tokenizer (a sample starts at its <|endoftext|> and is shown as text)");
    require(sample_every == 0 || zero_stage < 3, "--sample-every",
            "needs the whole model on rank 0 between steps: --zero 0, 1 or 2 (at 3, `sixnd sample` a checkpoint)");
    require(profile >= 0, "--profile", "must be a number of steps (0: off)" + got(profile));
    require(std::isfinite(price_per_device_hour) && price_per_device_hour >= 0, "--price-per-device-hour",
            "must be a finite number >= 0" + got(price_per_device_hour));
    require(eval_batches > 0, "--eval-batches", "must be positive" + got(eval_batches));
    require(max_bad_steps > 0, "--max-bad-steps", "must be positive" + got(max_bad_steps));
    const SpikeOptions& sp = spike;
    require(sp.detect.window >= 2 && sp.detect.window <= kMaxSide, "--spike-window",
            "must be in [2, " + std::to_string(kMaxSide) + "]" + got(sp.detect.window));
    require(std::isfinite(sp.detect.z_loss) && sp.detect.z_loss >= 0, "--spike-z-loss",
            "must be a finite number >= 0 (0: off)" + got(sp.detect.z_loss));
    require(std::isfinite(sp.detect.z_grad) && sp.detect.z_grad >= 0, "--spike-z-grad",
            "must be a finite number >= 0 (0: off)" + got(sp.detect.z_grad));
    require(sp.rollback_steps >= 1 && sp.rollback_steps <= kMaxSide, "--rollback-steps",
            "must be in [1, " + std::to_string(kMaxSide) + "]" + got(sp.rollback_steps));
    require(sp.rollback_skip_batches >= 0 && sp.rollback_skip_batches <= kMaxSide, "--rollback-skip-batches",
            "must be in [0, " + std::to_string(kMaxSide) + "]" + got(sp.rollback_skip_batches));
    require(sp.snapshot_every >= 0, "--snapshot-every", "must be 0 (off) or more" + got(sp.snapshot_every));
    require(sp.snapshot_every == 0 || sp.action == SpikeAction::rollback, "--snapshot-every", "needs --on-spike rollback");
    require(sp.max_rollbacks >= 1, "--max-rollbacks", "must be positive" + got(sp.max_rollbacks));
    require(sp.action != SpikeAction::rollback || sp.snapshot_every > 0 || checkpoint_every > 0, "--on-spike",
            "rollback needs a state to roll back to: --snapshot-every N or --checkpoint-every N");
    const LrInjection& lri = sp.inject_lr;
    require(lri.step >= 0 && lri.step <= steps, "--inject-lr-spike",
            "STEP must be between 1 and --steps (" + std::to_string(steps) + ")" + got(lri.step));
    require(lri.step == 0 || (std::isfinite(lri.factor) && lri.factor > 0), "--inject-lr-spike",
            "FACTOR must be a finite number > 0" + got(lri.factor));
    require(lri.step == 0 || (lri.steps >= 1 && lri.steps <= steps), "--inject-lr-spike",
            "STEPS must be between 1 and --steps (" + std::to_string(steps) + ")" + got(lri.steps));
    require(sp.inject_junk_step >= 0 && sp.inject_junk_step <= steps, "--inject-junk-batch",
            "STEP must be between 1 and --steps (" + std::to_string(steps) + ")" + got(sp.inject_junk_step));
    require(zero_stage >= 0 && zero_stage <= 3, "--zero", "stage must be 0, 1, 2 or 3" + got(zero_stage));
    // 0 is the device's own peak. Below a megaFLOP/s no device runs, and MFU against such a peak
    // prints as hundreds of digits that push the rest of the bill off its line.
    require(peak_tflops == 0 || (std::isfinite(peak_tflops) && peak_tflops >= 1e-6), "--peak-tflops",
            "must be a finite number of at least 1e-6 (1 MFLOP/s)" + got(peak_tflops));
    require(batch > 0 && batch <= kMaxSide, "--batch", "must be in [1, " + std::to_string(kMaxSide) + "]" + got(batch));
    require(seq_len > 0 && seq_len <= kMaxSide, "--seq-len", "must be in [1, " + std::to_string(kMaxSide) + "]" + got(seq_len));
    const long long micro = static_cast<long long>(batch) * seq_len;
    require(micro <= kMaxMicroTokens, "--batch", "x --seq-len = " + std::to_string(micro) + " tokens per micro-batch is over " +
                                                     std::to_string(kMaxMicroTokens));
    const long long per_micro_step = micro * world;
    require(total_batch_tokens >= 0, "--total-batch-tokens",
            "must be 0 (the default: batch x seq-len x ranks) or a positive multiple of it" + got(total_batch_tokens));
    if (total_batch_tokens > 0) {
        require(total_batch_tokens % per_micro_step == 0, "--total-batch-tokens",
                std::to_string(total_batch_tokens) + " is not a multiple of batch x seq-len x ranks = " +
                    std::to_string(batch) + " x " + std::to_string(seq_len) + " x " + std::to_string(world) + " = " +
                    std::to_string(per_micro_step));
        require(total_batch_tokens / per_micro_step <= kMaxSide, "--total-batch-tokens",
                std::to_string(total_batch_tokens) + " needs " + std::to_string(total_batch_tokens / per_micro_step) +
                    " micro-steps per step; at most " + std::to_string(kMaxSide));
    }
}

std::vector<std::string> TrainOptions::inert_settings() const {
    const TrainOptions d;
    const bool muon = optimizer.kind == OptimizerKind::muon, rollback = spike.action == SpikeAction::rollback;
    const bool detecting = spike.detect.z_loss > 0 || spike.detect.z_grad > 0;
    const std::string no_detection = "has no effect with --spike-z-loss 0 and --spike-z-grad 0 (no spike detection)";
    std::vector<std::string> out;
    const auto inert = [&](bool set, const std::string& flag, const std::string& why) {
        if (set) out.push_back(flag + " " + why);
    };
    inert(schedule.kind == ScheduleKind::constant && schedule.final_frac != d.schedule.final_frac, "--final-lr-frac",
          "has no effect with --schedule constant (it is where cosine and wsd decay to)");
    inert(!muon && optimizer.muon_lr != d.optimizer.muon_lr, "--muon-lr", "has no effect without --optimizer muon");
    inert(!muon && optimizer.muon_momentum != d.optimizer.muon_momentum, "--muon-momentum", "has no effect without --optimizer muon");
    inert(!muon && optimizer.muon_weight_decay != d.optimizer.muon_weight_decay, "--muon-weight-decay",
          "has no effect without --optimizer muon");
    inert(!detecting && spike.action != d.spike.action, "--on-spike", no_detection);
    inert(!detecting && spike.detect.window != d.spike.detect.window, "--spike-window", no_detection);
    inert(!rollback && spike.rollback_steps != d.spike.rollback_steps, "--rollback-steps", "has no effect without --on-spike rollback");
    inert(!rollback && spike.rollback_skip_batches != d.spike.rollback_skip_batches, "--rollback-skip-batches",
          "has no effect without --on-spike rollback");
    inert(!rollback && spike.max_rollbacks != d.spike.max_rollbacks, "--max-rollbacks", "has no effect without --on-spike rollback");
    inert((val_data.empty() || eval_every == 0) && eval_batches != d.eval_batches, "--eval-batches",
          "has no effect without --val-data and --eval-every (it sizes each validation)");
    inert(!val_data.empty() && eval_every == 0, "--val-data",
          "has no effect without --eval-every: it is read and checked, never evaluated");
    inert(!eval_task.empty() && eval_every == 0, "--eval-task", "has no effect without --eval-every: it is never scored");
    inert(sample_every == 0 && sample_tokens != d.sample_tokens, "--sample-tokens", "has no effect without --sample-every");
    inert(allow_resume_changes && resume.empty(), "--allow-resume-changes", "has no effect without --resume");
    return out;
}

}  // namespace sixnd
