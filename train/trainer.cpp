#include "train/trainer.h"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/printable.h"
#include "core/read_file.h"
#include "core/rng.h"
#include "core/shortest_number.h"
#include "core/transfer.h"
#include "data/loader.h"
#include "data/shard.h"
#include "dist/zero.h"
#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
#include "model/flops.h"
#include "model/decoder.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/bill.h"
#include "train/bits_per_byte.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "dist/rank_agreement.h"
#include "train/data_identity.h"
#include "train/hellaswag.h"
#include "train/muon.h"
#include "train/peak_flops.h"
#include "train/profile.h"
#include "train/run_dir.h"
#include "train/run_log.h"
#include "train/sampler.h"
#include "train/spike_causes.h"
#include "train/spike_detector.h"
#include "train/spike_evidence.h"
#include "train/stop_signal.h"
#include "train/tokenizer_match.h"

namespace sixnd {

using nlohmann::json;

nlohmann::json TrainOptions::to_json() const {
    return json{{"device", device},
                {"dtype", dtype_name(dtype)},
                {"attention", attention_name(attention)},
                {"recompute", recompute_name(recompute)},
                {"zero", zero_stage},
                {"seed", seed},
                {"train_data", train_data},
                {"val_data", val_data},
                {"shuffle", shuffle},
                {"batch", batch},
                {"seq_len", seq_len},
                {"total_batch_tokens", total_batch_tokens},
                {"steps", steps},
                {"stop_at", stop_at},
                {"lr", float_as_decimal(schedule.lr)},
                {"schedule", schedule_name(schedule.kind)},
                {"warmup", schedule.warmup},
                {"final_lr_frac", float_as_decimal(schedule.final_frac)},
                {"weight_decay", float_as_decimal(optimizer.weight_decay)},
                {"beta1", float_as_decimal(optimizer.beta1)},
                {"beta2", float_as_decimal(optimizer.beta2)},
                {"eps", float_as_decimal(optimizer.eps)},
                {"master_weights", optimizer.master_weights},
                {"optimizer", optimizer_name(optimizer.kind)},
                {"muon_lr", float_as_decimal(optimizer.muon_lr)},
                {"muon_momentum", float_as_decimal(optimizer.muon_momentum)},
                {"muon_weight_decay", float_as_decimal(optimizer.muon_weight_decay)},
                {"grad_clip", float_as_decimal(grad_clip)},
                {"out", out_dir},
                {"overwrite", overwrite},
                {"allow_resume_changes", allow_resume_changes},
                {"checkpoint_every", checkpoint_every},
                {"keep_last", keep_last},
                {"eval_every", eval_every},
                {"eval_batches", eval_batches},
                {"eval_task", eval_task},
                {"max_bad_steps", max_bad_steps},
                {"spike_window", spike.detect.window},
                {"spike_z_loss", spike.detect.z_loss},
                {"spike_z_grad", spike.detect.z_grad},
                {"on_spike", spike_action_name(spike.action)},
                {"rollback_steps", spike.rollback_steps},
                {"rollback_skip_batches", spike.rollback_skip_batches},
                {"snapshot_every", spike.snapshot_every},
                {"max_rollbacks", spike.max_rollbacks},
                {"inject_lr_spike", lr_injection_text(spike.inject_lr)},
                {"inject_junk_batch", spike.inject_junk_step},
                {"tokenizer", tokenizer},
                {"sample_every", sample_every},
                {"sample_tokens", sample_tokens},
                {"profile", profile},
                {"price_per_device_hour", price_per_device_hour}};
}

namespace {

// The flat layout's unit sizes (padding included): what `sixnd plan --check` needs to predict
// the ledger's model-state bytes and the bytes sent per rank exactly.
json layout_json(const ParamLayout& l, size_t unit_align) {
    json units = json::array();
    for (const auto& u : l.units()) units.push_back(u.size());
    return json{{"unit_align", unit_align}, {"total", l.total()}, {"units", units}};
}

json memory_json(const MemoryLedger& l) {
    json m;
    for (int i = 0; i < kMemCategories; i++) m[mem_category_name(static_cast<MemCategory>(i))] = l.current(static_cast<MemCategory>(i));
    m["total"] = l.current_total();
    m["peak"] = l.peak_total();
    return m;
}

// Micro-batches per step: --total-batch-tokens over one micro-batch on every rank (validate()
// made it a multiple), else one.
int micro_batches_per_step(const TrainOptions& o, int world) {
    const long long micro_tokens = static_cast<long long>(o.batch) * o.seq_len * world;
    return o.total_batch_tokens > 0 ? static_cast<int>(o.total_batch_tokens / micro_tokens) : 1;
}

std::string format_duration(double s) {
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(std::fmod(s, 3600) / 60));
    else if (s >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(std::fmod(s, 60)));
    else std::snprintf(buf, sizeof buf, "%.0fs", s);
    return buf;
}

}  // namespace

namespace {

// One training run: everything train() sets up, and the loop over steps, one method a part.
class Run {
public:
    Run(const TrainOptions& o, const GPTConfig& config, std::vector<float>&& params, Comm* comm);
    TrainResult go();

private:
    // Every rank opens the checkpoint; a fault every rank meets alike is printed once.
    static std::unique_ptr<CheckpointReader> open_resume(const TrainOptions& o, Comm* comm);
    // The checkpoint --resume names (latest: the newest complete one), checked against the
    // dtype and optimizer; null when `latest` finds none. `root`: this rank logs what it chose.
    static std::unique_ptr<CheckpointReader> open_checkpoint(const TrainOptions& o, bool root);
    static ModelOptions model_options(const TrainOptions& o, int world);
    void load_initial_state(std::vector<float> params);  // freed on return
    // What the checkpoint fixes against what this run asks for; returns the loader position to
    // start from. Throws on a conflict unless --allow-resume-changes, and where the checkpoint
    // leaves nothing to train (--steps, --stop-at).
    LoaderState resume_position();
    void warn_abandoned_branch() const;
    void warn_schedule_change() const;
    void end_step(int done, TrainResult& result);
    // Whether every parameter is finite after an update; every rank gets the same answer.
    bool params_finite();
    // The SIGINT/SIGTERM/SIGHUP the lowest-ranked rank that received one got, or 0; every rank
    // gets the same answer.
    int stop_signal();
    // Saves (unless step is saved already) and throws the error that says how to resume.
    [[noreturn]] void interrupted(int step, int sig);
    void check_tokenizer();
    void write_header();
    // The global gradient norm, and each unit's (unit_norms[u]); the same on every rank.
    double global_grad_norm(std::vector<double>& unit_norms);
    // Logs the skipped step (a non-finite one, or a spike's: `fired_on` names what fired);
    // throws once --max-bad-steps in a row are reached.
    void skip(int done, double loss, double norm, const nlohmann::json& fired_on = nullptr);

    // Everything a rollback rewinds, as this rank holds it: its parameter shard (storage
    // bytes), its optimizer state, the counters, the loader position and the spike history.
    struct Snapshot {
        int step = 0, applied = 0, bad_steps = 0;
        uint64_t tokens_seen = 0;
        LoaderState loader;
        std::vector<char> params, optimizer;
        nlohmann::json history;
    };
    Snapshot capture(int step);
    void restore(const Snapshot& s);
    // Parameters, optimizer state, counters and spike history from a checkpoint (resharded to
    // this run's layout); the loader position is the caller's.
    void restore_checkpoint(const CheckpointReader& ck, bool run_state);
    // Keeps an in-memory snapshot every --snapshot-every steps, dropping those no rollback can need.
    void maybe_snapshot(int step);
    // This step's learning rate: the schedule's, times --inject-lr-spike's factor while it lasts.
    float learning_rate(int step, float& scheduled, bool& injected);
    // The step's micro-batches: the loader's rows, or junk rows at --inject-junk-batch.
    void fill_micro(int step, int micro, bool junk);
    // Folds the last forward's max attention logit per layer into attention_now_ (first: restart).
    void note_attention(bool first);
    // What the trainer does at a spike (the update not yet applied): the determinism re-check,
    // the update measured, the report, then the action. After a rollback, next_step is the
    // restored step (the loop reruns from there).
    enum class SpikeOutcome { applied, skipped, rolled_back };
    SpikeOutcome on_spike(int step, const SpikeVerdict& v, double loss, double local_loss, double norm,
                          const std::vector<double>& unit_norms, float lr, float scheduled_lr, bool lr_injected, float scale,
                          bool junk, int& next_step);
    // The newest state at least --rollback-steps before `done`: an in-memory snapshot (index
    // into snapshots_) or a checkpoint of this lineage (its step); -1 / "" when there is none.
    int rollback_target(int done, int& snapshot, std::string& checkpoint_dir);
    std::vector<RowEvidence> gathered_rows(int step, bool junk);
    std::string junk_shard_path(int done) const;
    // Rank 0: the report (.json and its text .txt), and for a junk batch the shard of its rows.
    void write_spike_report(int done, const nlohmann::json& report, bool junk);
    // This lineage's complete checkpoints, by step: those under ckpt_root_ but on the branch a
    // resume left, and the one this run resumed from where it lies elsewhere (a resume into a
    // new --out: until this run saves, it is the only state on disk to return to or replay from).
    std::vector<CheckpointEntry> lineage_checkpoints() const;
    std::vector<std::string> checkpoints_before(int step) const;
    void progress(int done, double loss, double norm, float lr, double secs, double mfu);
    float evaluate();
    void sample(int done);
    void evaluations(int done, nlohmann::json& rec, TrainResult& result);
    json gathered_memory();
    // Every rank's bytes sent this step, by collective (sent_before: the counters at its start).
    json gathered_comm(const std::vector<size_t>& sent_before);
    std::vector<size_t> comm_counters() const;
    std::string save(int step);
    void finish(int steps_run);
    // A run that stops early (a signal, too many bad steps or rollbacks, non-finite weights)
    // logs why, the profile of the steps profiled so far, and its bill for the steps it ran (the
    // one it stops in, where that was computed: every stop but a signal's, which comes between
    // steps), before it throws.
    void stopped(int step, const json& why, bool computed_this_step);
    // --profile N: profile.json, its log event and table, from the steps profiled (none: nothing).
    void write_profile(int step);
    void bill(int step, int steps_run);

    const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();  // for the bill
    const TrainOptions& o_;
    const std::string ckpt_root_;
    std::unique_ptr<DirLock> lock_;  // held by rank 0 for the whole run
    StopSignals signals_;
    std::unique_ptr<CheckpointReader> ck_;
    GPTConfig cfg_;
    Backend be_;
    StepProfiler profiler_;
    Ops& ops_;
    MemoryBackend& mem_;
    LocalComm local_comm_;
    Comm& comm_;
    const int world_, rank_;
    const bool root_;
    ModelOptions mo_;
    GPT model_;
    ZeroEngine engine_;
    AdamW::Locate param_at_, grad_at_;
    std::unique_ptr<AdamW> opt_;
    DataLoader loader_;
    std::unique_ptr<DataLoader> val_;
    int accum_ = 1;
    long long step_tokens_ = 0;
    int start_step_ = 0, last_step_ = 0, applied_ = 0, bad_steps_ = 0;
    int iterations_ = 0;  // steps computed in this process, a rollback's reruns included
    uint64_t tokens_seen_ = 0;
    std::string tokenizer_hash_, tokenizer_bytes_;
    Schedule sched_;
    FlopsPerToken fpt_;
    PeakFlops peak_;
    json data_info_;
    std::unique_ptr<RunLog> log_;
    bool tty_ = false;
    bool mfu_over_peak_warned_ = false;
    std::chrono::steady_clock::time_point run_start_;
    long long eval_batches_ = 0;  // per evaluation: --eval-batches, or all the validation data holds if fewer
    float evaluated_ = 0;  // the last validation loss
    // Validation bits per byte (issue 16): needs --tokenizer to count the bytes of the decoded
    // validation tokens; -1 when there is none.
    std::unique_ptr<TokenBytes> val_bytes_;
    double evaluated_bpb_ = -1;
    // --eval-task: every rank scores every item (the forward passes stay collective under
    // ZeRO-3); rank 0 logs the accuracies.
    std::vector<HellaSwagItem> task_items_;
    // The run's tokenizer (--tokenizer, else the checkpoint's), loaded once: the checks against
    // the model and data, bits per byte, --eval-task's items and --sample-every's text.
    std::unique_ptr<Tokenizer> tok_;
    uint32_t sample_start_ = 0;  // <|endoftext|>: a sample is a document from its start
    std::string run_id_;     // the lineage (CheckpointMeta::run_id)
    std::string last_good_;  // the newest checkpoint this lineage saved or resumed from
    // A resume from an older step than the lineage's newest: the steps of the newer checkpoints
    // (the branch it leaves), until this run's first save deletes them. No rollback restores
    // one and no spike report names one meanwhile.
    std::vector<int> left_branch_;
    bool on_left_branch(const CheckpointEntry& e) const;
    int saved_step_ = -1;    // the step of the newest checkpoint saved in this process
    SpikeHistory history_;
    SpikeRunState spike_run_;
    std::vector<Snapshot> snapshots_;  // oldest first
    // The step's micro-batches as this rank trained on them, for a spike's evidence: inputs and
    // targets [accum][B*T], the loader's sample of each row [accum][B], per-token losses.
    std::vector<int32_t> step_inputs_, step_targets_;
    std::vector<uint64_t> step_samples_;
    std::vector<float> step_token_losses_;
    std::vector<float> attention_now_;  // the step's max pre-softmax logit per layer
};

namespace {

// A fresh run's id, rank 0's on every rank: each rank picks checkpoints by lineage (a rollback's
// target), and each would otherwise draw an id of its own. Two 32-bit halves, exact as doubles.
std::string agreed_run_id(Comm& comm) {
    const uint64_t mine = std::stoull(new_run_id(), nullptr, 16);
    const std::vector<double> all =
        comm.all_gather_host({static_cast<double>(mine >> 32), static_cast<double>(mine & 0xffffffffu)});
    return hex64(static_cast<uint64_t>(all[0]) << 32 | static_cast<uint64_t>(all[1]));
}

}  // namespace

std::unique_ptr<CheckpointReader> Run::open_resume(const TrainOptions& o, Comm* comm) {
    on_root_agreed(comm, [&] {
        restore_moved_aside_checkpoints(o.out_dir + "/checkpoints");
        finish_interrupted_removals(o.out_dir + "/checkpoints");
    });
    if (o.resume.empty()) return nullptr;
    std::unique_ptr<CheckpointReader> ck;
    on_all_agreed(comm, [&] { ck = open_checkpoint(o, !comm || comm->rank() == 0); });
    // Ranks that find different checkpoints under --out (a node-local directory holding another
    // run's) would resume and start afresh at once, and wait in different collectives for good.
    if (comm && comm->size() > 1) {
        const std::string found = ck ? "run " + ck->meta().run_id + " step " + std::to_string(ck->meta().step) : "none";
        check_ranks_agree(*comm, {{"the checkpoint --resume found", found}});
    }
    return ck;
}

std::unique_ptr<CheckpointReader> Run::open_checkpoint(const TrainOptions& o, bool root) {
    const std::string root_dir = o.out_dir + "/checkpoints";
    std::string dir = o.resume;
    std::vector<CheckpointEntry> all;
    if (o.resume == "latest") {
        // The newest complete checkpoint; newer incomplete ones (no DONE) are named, not used.
        dir.clear();
        std::string incomplete;
        all = list_checkpoints(root_dir);
        for (auto it = all.rbegin(); it != all.rend() && dir.empty(); ++it) {
            if (it->complete) dir = it->dir;
            else incomplete += (incomplete.empty() ? "" : ", ") + std::filesystem::path(it->dir).filename().string();
        }
        if (dir.empty() && !incomplete.empty())
            throw Error("--resume", "latest: " + root_dir + " holds only incomplete checkpoints (" + incomplete +
                                        ": no DONE marker); nothing to resume from");
        if (dir.empty()) {
            if (root) log_info("--resume latest: no checkpoint under " + root_dir + "; starting fresh");
            return nullptr;
        }
        if (root && !incomplete.empty())
            log_warn("--resume latest: skipping incomplete checkpoint " + incomplete + " (no DONE marker); resuming from " + dir);
    }
    std::unique_ptr<CheckpointReader> ck;
    try {
        ck = std::make_unique<CheckpointReader>(dir);
    } catch (const Error& e) {
        if (o.resume != "latest") throw;
        // Damaged: `latest` would only read it again. The way on is the finished one before it.
        std::string before;
        for (const CheckpointEntry& c : all)
            if (c.complete && c.dir != dir) before = c.dir;
        throw Error(e.where(), e.fault() + "; --resume latest found it: move " + dir + " out of " + root_dir +
                                  (before.empty() ? " (the run has no finished checkpoint before it)"
                                                  : " and --resume latest takes " + before + ", the one before it"));
    }
    const std::string& written = ck->meta().dtype;
    if (written != dtype_name(o.dtype))
        throw Error(dir, "checkpoint was written with --dtype " + written + "; resume with the same dtype");
    const std::string optimizer = ck->meta().config.value("optimizer", "adamw");
    if (optimizer != optimizer_name(o.optimizer.kind))
        throw Error(dir, "checkpoint was written with --optimizer " + optimizer + "; resume with the same optimizer (the "
                         "saved state is " + optimizer + "'s)");
    return ck;
}

ModelOptions Run::model_options(const TrainOptions& o, int world) {
    const ZeroModelBuffers z = zero_model_buffers(o.zero_stage, world);
    ModelOptions m;
    m.attention = o.attention;
    m.recompute = o.recompute;
    m.unit_align = z.unit_align;
    m.allocate_params = z.full_params;
    m.allocate_grads = z.full_grads;
    return m;
}

Run::Run(const TrainOptions& o, const GPTConfig& config, std::vector<float>&& params, Comm* comm)
    : o_(o),
      ckpt_root_(o.out_dir + "/checkpoints"),
      lock_(lock_run_dir(o.out_dir, comm)),
      signals_(!comm || comm->rank() == 0, comm && comm->size() > 1),
      ck_(open_resume(o, comm)),
      cfg_(ck_ ? ck_->meta().model : config),
      be_(StepProfiler::wrap(make_backend(o.device, o.dtype, comm ? comm->local_rank() : 0), o.profile)),
      profiler_(be_, o.profile),
      ops_(*be_.ops),
      mem_(*be_.memory),
      local_comm_(mem_),
      comm_(comm ? *comm : local_comm_),
      world_(comm_.size()),
      rank_(comm_.rank()),
      root_(rank_ == 0),
      mo_(model_options(o, world_)),
      model_(cfg_, ops_, mo_),
      engine_(o.zero_stage, comm_, mem_, o.dtype, model_.unit_spans(), model_, model_.params(), model_.grads(),
              [this](void* dst, const void* src, size_t n) { ops_.residual_forward(dst, dst, src, n); }),
      param_at_([this](const ShardSpan& s) { return engine_.param_at(s); }),
      grad_at_([this](const ShardSpan& s) { return engine_.grad_at(s); }),
      loader_(made_on_all<DataLoader>(comm, [&] {
          return DataLoader(o.train_data, o.batch, o.seq_len, rank_, world_, micro_batches_per_step(o, world_), o.shuffle, o.seed);
      })),
      history_(o.spike.detect, static_cast<int>(model_.layout().units().size()), cfg_.n_layer) {
    model_.set_hooks(profiler_.hooks(&engine_));
    // The attention logits' growth is a spike's first suspect; its per-row maxima cost one
    // float per row.
    model_.set_track_attention_max(true);
    on_all_agreed(comm, [&] {
        if (ck_ && o.model_flags_given && (cfg_.describe() != config.describe()))
            throw Error("--resume", ck_->dir() + " holds the model " + cfg_.describe() + "; the model flags ask for " +
                                        config.describe() + ". The checkpoint fixes the model: drop --init/--model/--vocab-size/"
                                        "--max-seq-len, or start a fresh run");
    });
    // The flags checked the fresh model's context; a resumed run's model is the checkpoint's.
    on_all_agreed(comm, [&] { cfg_.require_seq_len(o.seq_len); });
    run_id_ = ck_ ? ck_->meta().run_id : agreed_run_id(comm_);
    last_good_ = ck_ ? ck_->dir() : "";
    std::vector<std::string> other_runs;
    on_root_agreed(comm, [&] { other_runs = claim_checkpoints(ckpt_root_, run_id_, o.overwrite); });
    on_all_agreed(comm, [&] {
        loader_.tokens().check_vocab(cfg_.vocab_size);
        if (o.val_data.empty()) return;
        val_ = std::make_unique<DataLoader>(o.val_data, o.batch, o.seq_len, rank_, world_, 1, false, 0);
        val_->tokens().check_vocab(cfg_.vocab_size);
    });
    if (!o.val_data.empty()) {
        if (const std::string both = root_ ? shard_in_both(loader_.tokens(), val_->tokens()) : ""; !both.empty())
            log_warn("--val-data " + o.val_data + ": " + both + " is a --train-data shard or a copy of one; the validation loss "
                     "measures tokens this run trains on");
        const long long held = static_cast<long long>(val_->samples_per_epoch() / (static_cast<uint64_t>(o.batch) * world_));
        eval_batches_ = std::max(1LL, std::min<long long>(o.eval_batches, held));
        if (root_ && eval_batches_ < o.eval_batches)
            log_warn("--eval-batches " + std::to_string(o.eval_batches) + ": " + o.val_data + " holds " + std::to_string(held) +
                     " batches of " + std::to_string(o.batch) + " x " + std::to_string(o.seq_len) +
                     " per rank; each evaluation uses " + std::to_string(eval_batches_) + " (the eval records say so)");
    }
    accum_ = micro_batches_per_step(o, world_);
    step_tokens_ = static_cast<long long>(o.batch) * o.seq_len * world_ * accum_;
    data_info_ = data_json(loader_.tokens());
    // Each rank reads its own copy of the data (a node's stale copy, another working directory):
    // other tokens train silently, and a validation set or --eval-task of another length leaves
    // the ranks in different collectives at the first evaluation; another --tokenizer counts
    // other bytes for bits per byte. The content, not the paths, must agree.
    if (world_ > 1) {
        std::vector<std::pair<std::string, std::string>> data{{"--train-data's shard contents", data_info_.at("hash")}};
        if (val_) data.emplace_back("--val-data's shard contents", data_json(val_->tokens()).at("hash"));
        const auto content = [](const std::string& path) {
            const std::string bytes = read_whole_file(path);
            return hex64(XXH3_64bits(bytes.data(), bytes.size()));
        };
        if (!o.tokenizer.empty()) data.emplace_back("--tokenizer's content", content(o.tokenizer));
        if (!o.eval_task.empty()) data.emplace_back("--eval-task's content", content(o.eval_task));
        check_ranks_agree(comm_, data);
    }
    check_tokenizer();
    last_step_ = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
    load_initial_state(std::move(params));
    profiler_.window(start_step_, last_step_);
    if (root_ && o.schedule.lr > 1) {
        char lr_text[32];
        std::snprintf(lr_text, sizeof lr_text, "%g", o.schedule.lr);
        log_warn(std::string("--lr ") + lr_text + " is above 1: Adam moves each weight by about the learning rate a step, "
                 "so this run will diverge (a missing minus in the exponent?)");
    }
    // Decoupled decay multiplies the weights by 1 - lr x decay each step: at 1 or more the peak
    // learning rate zeroes them or flips their sign (the loss ran to 1e10). Warned, as --lr above 1
    // is: the run does what it was told.
    const auto decay_warning = [&](double lr, double decay, const char* flag, const char* lr_flag) {
        if (!root_ || lr * decay < 1) return;
        char text[200];
        std::snprintf(text, sizeof text, "%s %g x %s %g = %g: each step multiplies the weights by 1 - %g, so this run "
                      "will zero or flip them; keep the product below 1", flag, decay, lr_flag, lr, lr * decay, lr * decay);
        log_warn(text);
    };
    decay_warning(o.schedule.lr, o.optimizer.weight_decay, "--weight-decay", "--lr");
    if (o.optimizer.kind == OptimizerKind::muon)
        decay_warning(o.optimizer.muon_lr, o.optimizer.muon_weight_decay, "--muon-weight-decay", "--muon-lr");
    // The CUDA flash kernels are BF16 (model/cuda/cuda_ops.cu, use_flash): FP32 runs the naive
    // kernels, and the run's header would otherwise say flash.
    if (root_ && be_.device == "cuda" && o.dtype == DType::f32 && o.attention == AttentionKind::flash)
        log_warn("--attention flash with --dtype fp32 on CUDA runs the naive attention kernels: the flash kernels are BF16");
    if (root_ && o.schedule.warmup > o.steps)
        log_warn("--warmup " + std::to_string(o.schedule.warmup) + " is longer than --steps " + std::to_string(o.steps) +
                 ": the learning rate never reaches --lr");
    if (root_ && o.sample_every > 0 && o.sample_tokens > cfg_.max_seq_len)
        log_warn("--sample-tokens " + std::to_string(o.sample_tokens) + " is more than the model's context: each sample is " +
                 std::to_string(cfg_.max_seq_len) + " tokens");
    if (val_ && !o.tokenizer.empty()) val_bytes_ = std::make_unique<TokenBytes>(*tok_);
    else if (val_ && root_) log_info("no --tokenizer: validation reports loss per token only, not bits per byte");
    if (!o.eval_task.empty()) {
        task_items_ = read_hellaswag(o.eval_task);
        check_endings_fit(task_items_, *tok_, cfg_.max_seq_len);
    }
    if (o.sample_every > 0)
        on_all_agreed(comm, [&] { sample_start_ = sample_start_token(*tok_, o.tokenizer); });
    sched_ = o.schedule;
    sched_.total_steps = o.steps;
    fpt_ = flops_per_token(cfg_, o.seq_len, o.recompute);
    peak_ = peak_flops(be_, o.peak_tflops);
    // Rank 0 alone opens the log; a log it cannot open must stop every rank, not rank 0 alone.
    on_root_agreed(comm, [&] { log_ = std::make_unique<RunLog>(o.log, RunLogOwner{ck_ != nullptr, o.out_dir, o.overwrite}); });
    if (!log_) log_ = std::make_unique<RunLog>("", RunLogOwner{});
    on_root_agreed(comm, [&] { delete_other_runs(ckpt_root_, other_runs); });
    tty_ = root_ && o.progress && isatty(fileno(stderr));
}

// Parameters, optimizer state, counters and the loader position: from the checkpoint (in the
// layout it was written with, resharded to this run's) or from the initial parameters.
void Run::load_initial_state(std::vector<float> params) {
    const ParamLayout& layout = model_.layout();
    if (!ck_) {
        const ParamLayout given(cfg_);
        if (params.size() != given.total()) throw Error("initial parameters", "size does not match the model");
        std::vector<float> placed(layout.total(), 0.0f);
        relayout_range(given, layout, 0, params.size(), params.data(), placed.data(), 4);
        engine_.load_params(to_storage(placed.data(), placed.size(), o_.dtype).data());
        opt_ = make_optimizer(ops_, layout, engine_.shard(), o_.optimizer, param_at_, comm_, o_.schedule.lr);
        return;
    }
    start_step_ = ck_->meta().step;
    for (const CheckpointEntry& e : list_checkpoints(ckpt_root_))
        if (e.complete && e.run_id == run_id_ && e.step > start_step_) left_branch_.push_back(e.step);
    // The position's checks before the checkpoint's state is read: a refused resume reads none.
    LoaderState position;
    on_all_agreed(&comm_, [&] { position = resume_position(); });
    restore_checkpoint(*ck_, true);
    loader_.set_state(position);
}

void Run::restore_checkpoint(const CheckpointReader& ck, bool run_state) {
    const ParamLayout& layout = model_.layout();
    engine_.load_params(restore_params(ck, layout).data());
    ops_.take_nonfinite_update();  // what an undone update stored is gone
    // A rollback replaces the optimizer: its states are freed before the new ones are made, or
    // the run's peak memory would hold both sets for a moment.
    opt_.reset();
    opt_ = make_optimizer(ops_, layout, engine_.shard(), o_.optimizer, param_at_, comm_, o_.schedule.lr);
    restore_optimizer(*opt_, mem_, ck, layout);
    const CheckpointMeta& m = ck.meta();
    applied_ = m.applied_steps;
    bad_steps_ = m.bad_steps;
    tokens_seen_ = m.tokens_seen;
    // A checkpoint from before spike states were saved starts with an empty history.
    history_ = SpikeHistory(o_.spike.detect, static_cast<int>(layout.units().size()), cfg_.n_layer);
    if (!ck.has_file("spikes.json")) return;
    SpikeRunState r;
    parse_spike_state(ck.read_file("spikes.json"), ck.path_of("spikes.json"), history_, r);
    if (run_state) spike_run_ = r;
}

LoaderState Run::resume_position() {
    const CheckpointMeta& m = ck_->meta();
    std::vector<std::string> changed;
    auto differs = [&](const std::string& flag, const json& then, const json& now) {
        if (then != now) changed.push_back(flag + " " + then.dump() + " -> " + now.dump());
    };
    differs("--seq-len", m.config.value("seq_len", json()), o_.seq_len);
    differs("--shuffle", m.config.value("shuffle", json()), o_.shuffle);
    differs("--seed", m.config.value("seed", json()), o_.seed);
    const std::string data = data_change(m.data, data_info_);
    if (!data.empty()) changed.push_back("--train-data " + data);
    if (!m.tokenizer_hash.empty() && !tokenizer_hash_.empty()) differs("--tokenizer (hash)", m.tokenizer_hash, tokenizer_hash_);
    const bool position_lost = !changed.empty();
    differs("tokens per step", m.batch_tokens, step_tokens_);
    std::string list;
    for (const auto& c : changed) list += (list.empty() ? "" : ", ") + c;
    if (!changed.empty() && !o_.allow_resume_changes)
        throw Error("--resume", ck_->dir() + " was written with other data settings (" + list +
                                    "); resume with the checkpoint's values, or pass --allow-resume-changes to "
                                    "change them deliberately");
    // Before the notes on the resume below (its schedule "from step N+1"), which a run that
    // trains nothing would print for nothing.
    if (start_step_ >= last_step_) {
        const bool stop_at = o_.stop_at > 0 && o_.stop_at < o_.steps;
        throw Error(stop_at ? "--stop-at" : "--steps", "the checkpoint is already at step " + std::to_string(start_step_) + "; " +
                                                           (stop_at ? "--stop-at " : "--steps ") + std::to_string(last_step_) +
                                                           " leaves nothing to train");
    }
    if (root_)
        log_info("resuming from " + ck_->dir() + " at step " + std::to_string(m.step) + ": the checkpoint fixes the model (" +
                 cfg_.describe() + "), --dtype " + m.dtype + " and the optimizer state" +
                 (changed.empty() ? std::string() : "; changed on purpose: " + list) +
                 (position_lost ? "; the data position restarts at the beginning" : ""));
    // Not a data setting, so allowed; but on -> off drops the FP32 copy the checkpoint kept.
    const json master_then = m.config.value("master_weights", json());
    if (root_ && m.dtype == "bf16" && master_then.is_boolean() && master_then != o_.optimizer.master_weights)
        log_warn(o_.optimizer.master_weights
                     ? "--master-weights on: " + ck_->dir() + " has no FP32 master weights; they start from its BF16 weights"
                     : "--master-weights off: the FP32 master weights in " + ck_->dir() +
                           " are dropped; the run goes on from their BF16 rounding, and updates smaller than a BF16 step "
                           "are lost from here");
    if (root_) warn_abandoned_branch();
    if (root_) warn_schedule_change();
    // An epoch ends when fewer than a step's samples remain (data/loader.h), however the step is
    // split into ranks and micro-batches: with other tokens per step the run reads the same
    // samples to the end of this epoch, then others than it would have.
    if (root_ && !position_lost && m.batch_tokens > 0 && m.batch_tokens != step_tokens_)
        log_warn("resuming with " + std::to_string(step_tokens_) + " tokens per step, where " + ck_->dir() + " had " +
                 std::to_string(m.batch_tokens) + ": an epoch ends when fewer than a step's samples remain, so after this "
                 "epoch the run reads other samples than the uninterrupted run would");
    return position_lost ? LoaderState{} : m.loader;
}

// Resuming an older step than the lineage's newest starts a new branch: the newer checkpoints
// are its abandoned future, which prune_checkpoints deletes at this run's first save so that
// `latest` continues the new branch. Said now, while they can still be copied away.
void Run::warn_abandoned_branch() const {
    std::vector<std::string> newer;
    for (const CheckpointEntry& e : list_checkpoints(ckpt_root_))
        if (e.complete && e.run_id == run_id_ && e.step > start_step_) newer.push_back(std::filesystem::path(e.dir).filename().string());
    if (newer.empty()) return;
    log_warn("resuming from step " + std::to_string(start_step_) + ", older than this run's newest checkpoint: " +
             std::to_string(newer.size()) + " newer checkpoint(s) (" + newer.front() +
             (newer.size() > 1 ? " .. " + newer.back() : "") + ") belong to the branch this resume leaves and are deleted when "
             "this run saves its first checkpoint");
}

// The schedule is not a data setting: a resume may change it on purpose (a longer run, another
// decay). But a --steps or --lr left at its default by mistake bends the learning-rate curve at
// the resume without a word, and the run no longer continues the one it resumes. Knobs that
// leave this run's rates from the checkpoint's step on as they were (a constant schedule's
// --steps, a warm-up both runs are past) are not named.
void Run::warn_schedule_change() const {
    const CheckpointMeta& m = ck_->meta();
    const auto then = [&](const char* key, double now) {
        const json v = m.config.value(key, json());
        return v.is_number() ? v.get<double>() : now;  // older checkpoints: taken as unchanged
    };
    const Schedule& s = o_.schedule;
    const std::string kind = schedule_name(s.kind);
    const json named = m.config.value("schedule", json());
    const std::string kind_then = named.is_string() ? named.get<std::string>() : kind;
    const bool decays = s.kind != ScheduleKind::constant || kind_then != kind;
    std::vector<std::string> changed;
    // as_float: a float option's values, named as the floats they are.
    const auto differs = [&](const char* flag, double was, double is, bool matters, bool as_float = true) {
        if ((as_float ? static_cast<float>(was) == static_cast<float>(is) : was == is) || !matters) return;
        changed.push_back(std::string(flag) + " " + shortest_number(was, as_float) + " -> " + shortest_number(is, as_float));
    };
    if (kind_then != kind) changed.push_back("--schedule " + kind_then + " -> " + kind);
    differs("--lr", then("lr", s.lr), static_cast<float>(s.lr), true);
    const double warmup_then = then("warmup", s.warmup);
    differs("--warmup", warmup_then, s.warmup, decays || start_step_ < std::max<double>(warmup_then, s.warmup), false);
    differs("--final-lr-frac", then("final_lr_frac", s.final_frac), static_cast<float>(s.final_frac), decays);
    differs("--steps", then("steps", o_.steps), o_.steps, decays, false);
    const float muon_lr = o_.optimizer.muon_lr;
    differs("--muon-lr", then("muon_lr", muon_lr), muon_lr, o_.optimizer.kind == OptimizerKind::muon);
    if (changed.empty()) return;
    std::string list;
    for (const auto& c : changed) list += (list.empty() ? "" : ", ") + c;
    log_warn("resuming with another learning-rate schedule than " + ck_->dir() + "'s run (" + list + "): from step " +
             std::to_string(start_step_ + 1) + " the rates follow this run's flags, not the curve the checkpoint was on");
}

// The tokenizer checkpoints carry: --tokenizer, else (resuming) the checkpoint's own copy. Its
// bytes are kept, since the checkpoint it came from may be pruned before the next save. It must
// fit the model and have made the shards (train/tokenizer_match.h).
void Run::check_tokenizer() {
    const std::string path = !o_.tokenizer.empty()                      ? o_.tokenizer
                             : ck_ && ck_->has_file("tokenizer.bin") ? ck_->path_of("tokenizer.bin")
                                                                      : "";
    if (path.empty()) return;
    tokenizer_bytes_ = read_whole_file(path);
    tok_ = std::make_unique<Tokenizer>(Tokenizer::load(path));
    require_model_vocab(*tok_, path, cfg_.vocab_size);
    tokenizer_hash_ = tok_->hash();
    std::vector<NamedTokens> data{{&loader_.tokens(), o_.train_data}};
    if (val_) data.push_back({&val_->tokens(), o_.val_data});
    require_data_tokenizer(data, *tok_, path);
}

void Run::write_header() {
    log_->write({{"type", "header"},
                 {"config", o_.to_json()},
                 {"model", cfg_.to_json()},
                 {"params", model_.layout().num_params()},
                 {"device", be_.device},
                 {"device_name", be_.device_name},
                 {"world_size", world_},
                 {"comm", comm_.name()},
                 {"zero_stage", o_.zero_stage},
                 {"peak_flops", peak_.flops_per_s},
                 {"peak_source", peak_.source},
                 {"achievable_flops", peak_.achievable},
                 {"achievable_source", peak_.achievable_source},
                 {"peak_note", peak_.note},
                 {"cpu", cpu_host_json()},
                 {"flops_per_token", fpt_.model},
                 {"hw_flops_per_token", fpt_.hardware},
                 {"optimizer_flops_per_step", opt_->matmul_flops_per_step()},
                 {"grad_accum_steps", accum_},
                 {"layout", layout_json(model_.layout(), mo_.unit_align)},
                 {"batch_tokens", step_tokens_},
                 {"resumed_from", ck_ ? ck_->dir() : ""},
                 {"data", data_info_},
                 {"build", {{"compiler", __VERSION__}, {"date", __DATE__}}}});
    if (root_)
        log_info("training " + cfg_.describe() + " (" + std::to_string(model_.layout().num_params()) + " parameters) on " +
                 std::to_string(world_) + " x " + be_.device + " [" + be_.device_name + "], " + dtype_name(o_.dtype) +
                 ", ZeRO-" + std::to_string(o_.zero_stage) + ", " + std::to_string(step_tokens_) + " tokens/step (" +
                 std::to_string(accum_) + " micro-steps of " + std::to_string(world_) + "x" + std::to_string(o_.batch) +
                 "x" + std::to_string(o_.seq_len) + ")");
    if (root_ && !peak_.note.empty()) log_warn(peak_.note);
}

// The global gradient norm: each rank sums the squares of the gradients it holds; stages 1-3
// hold disjoint shards, so those partial sums are added over the ranks.
double Run::global_grad_norm(std::vector<double>& unit_norms) {
    const size_t U = model_.layout().units().size();
    std::vector<double> sq(U, 0.0);
    for (const ShardSpan& s : engine_.shard()) sq[static_cast<size_t>(s.unit)] += ops_.sum_squares(engine_.grad_at(s), s.count);
    if (engine_.norm_is_partial()) {
        // Added in rank order on every rank, so every rank holds the same bits.
        const std::vector<double> all = comm_.all_gather_host(sq);
        for (size_t u = 0; u < U; u++) {
            sq[u] = 0;
            for (int r = 0; r < world_; r++) sq[u] += all[static_cast<size_t>(r) * U + u];
        }
    }
    unit_norms.resize(U);
    double sumsq = 0;
    for (size_t u = 0; u < U; u++) {
        sumsq += sq[u];
        unit_norms[u] = std::sqrt(sq[u]);
    }
    return std::sqrt(sumsq);
}

void Run::skip(int done, double loss, double norm, const json& fired_on) {
    bad_steps_++;
    const bool spike = !fired_on.is_null();
    json ev{{"reason", spike ? "spike" : "non_finite"},
            {"loss", std::isfinite(loss) ? json(loss) : json(nullptr)},
            {"grad_norm", std::isfinite(norm) ? json(norm) : json(nullptr)},
            {"consecutive", bad_steps_}};
    if (spike) ev["fired_on"] = fired_on;
    log_->event("skip", done, ev);
    if (root_ && !spike)
        log_warn("step " + std::to_string(done) + ": non-finite loss or gradient; update skipped (" +
                 std::to_string(bad_steps_) + " in a row)");
    if (bad_steps_ < o_.max_bad_steps) return;
    const std::string& last = last_good_;
    stopped(done, {{"reason", "max_bad_steps"}, {"last_checkpoint", last}}, true);
    // Every rank counts the same steps (from the reduced loss and norm, and the voted spikes), so
    // under mpirun the job says it once.
    throw AgreedError("training", std::to_string(bad_steps_) + " consecutive steps with a non-finite loss or gradient, or skipped as " +
                                      "spikes (--max-bad-steps " + std::to_string(o_.max_bad_steps) + "); stopped at step " +
                                      std::to_string(done) + ". Spikes that go on are the weights', not a batch's: --on-spike "
                                      "rollback restores an earlier state. The last good checkpoint is " +
                                      (last.empty() ? std::string("(none written)") : last));
}

void Run::progress(int done, double loss, double norm, float lr, double secs, double mfu) {
    if (!root_ || !o_.progress) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
    const double eta = elapsed / (iterations_ + 1) * (last_step_ - done);  // this step is not counted yet
    char val[32] = "";
    if (val_ && o_.eval_every > 0 && (done % o_.eval_every == 0 || done == last_step_))
        std::snprintf(val, sizeof val, " val %.4f", evaluated_);
    char line[256];
    std::snprintf(line, sizeof line, "step %d/%d | loss %.4f%s | lr %.2e | norm %.3f | %.0f tok/s | MFU %.1f%% of %s | ETA %s",
                  done, o_.steps, loss, val, lr, norm, step_tokens_ / secs, mfu * 100, peak_.against.c_str(),
                  format_duration(eta).c_str());
    const int report_every = std::max(1, (last_step_ - start_step_) / 20);
    if (tty_) std::fprintf(stderr, "\r%-120s", line);
    else if (done % report_every == 0 || done == last_step_) std::fprintf(stderr, "%s\n", line);
}

// After step `done`, every --sample-every steps and at the last: rank 0 (at ZeRO 0-2 it holds the
// whole model) draws --sample-tokens tokens from <|endoftext|>, shows them and logs them. The seed
// is the run's and the step's, so a resumed run draws the same sample at the same step.
void Run::sample(int done) {
    if (o_.sample_every <= 0 || (done % o_.sample_every != 0 && done != last_step_) || !root_) return;
    SampleOptions so;
    so.max_tokens = std::min(o_.sample_tokens, cfg_.max_seq_len);
    so.stop_token = static_cast<int>(sample_start_);
    so.vocab_limit = static_cast<int>(std::min<size_t>(tok_->vocab_size(), static_cast<size_t>(cfg_.vocab_size)));
    uint64_t state = o_.seed ^ (static_cast<uint64_t>(done) << 32);
    so.seed = splitmix64(state);
    std::vector<uint32_t> out;
    try {
        Decoder dec(model_, so.max_tokens);  // the start token and every drawn one but the last
        out = generate(dec, {sample_start_}, so);
    } catch (const Error& e) {
        log_warn("step " + std::to_string(done) + ": no sample: " + e.fault());
        return;
    }
    const std::string text = tok_->decode(out);
    log_info("step " + std::to_string(done) + " sample: " + printable(text));
    log_->event("sample", done, {{"ids", out}, {"text", utf8_repaired(text)}});
}

float Run::evaluate() {
    const int B = o_.batch, T = o_.seq_len;
    val_->set_state(LoaderState{});
    const long long n = eval_batches_;
    std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
    double sum = 0, bytes = 0;
    for (long long k = 0; k < n; k++) {
        val_->next(in.data(), tg.data());
        sum += model_.forward(in.data(), tg.data(), B, T);
        if (val_bytes_) bytes += static_cast<double>(val_bytes_->count(tg.data(), tg.size()));
    }
    evaluated_ = static_cast<float>(comm_.all_reduce_sum_host(sum / n) / world_);
    if (val_bytes_)
        evaluated_bpb_ = bits_per_byte(evaluated_, static_cast<double>(n) * B * T * world_, comm_.all_reduce_sum_host(bytes));
    return evaluated_;
}

json Run::gathered_memory() {
    const MemoryLedger& l = mem_.ledger();
    std::vector<double> mine;
    for (int i = 0; i < kMemCategories; i++) mine.push_back(static_cast<double>(l.current(static_cast<MemCategory>(i))));
    mine.push_back(static_cast<double>(l.peak_total()));
    std::vector<double> all = comm_.all_gather_host(mine);
    json ranks = json::array();
    for (int r = 0; r < world_; r++) {
        json m;
        for (int i = 0; i < kMemCategories; i++) m[mem_category_name(static_cast<MemCategory>(i))] = all[r * mine.size() + i];
        m["peak"] = all[r * mine.size() + kMemCategories];
        ranks.push_back(m);
    }
    return ranks;
}

std::vector<size_t> Run::comm_counters() const {
    std::vector<size_t> c;
    for (int i = 0; i < static_cast<int>(Collective::count); i++) c.push_back(comm_.bytes_sent(static_cast<Collective>(i)));
    return c;
}

json Run::gathered_comm(const std::vector<size_t>& sent_before) {
    const std::vector<size_t> now = comm_counters();
    std::vector<double> mine;
    for (size_t i = 0; i < now.size(); i++) mine.push_back(static_cast<double>(now[i] - sent_before[i]));
    std::vector<double> all = comm_.all_gather_host(mine);
    json ranks = json::array();
    for (int r = 0; r < world_; r++) {
        json m;
        for (size_t i = 0; i < mine.size(); i++) m[collective_name(static_cast<Collective>(i))] = all[r * mine.size() + i];
        ranks.push_back(m);
    }
    return ranks;
}

// Collective: every rank writes its optimizer state; rank 0 the parameters, meta and DONE. A
// write can fail on one rank alone (its file over a quota, a full disk between two writes):
// each stage is agreed, so every rank stops together instead of waiting for the failed one in
// the next collective.
std::string Run::save(int step) {
    std::unique_ptr<CheckpointWriter> w;
    on_root_agreed(&comm_, [&] { w = std::make_unique<CheckpointWriter>(ckpt_root_, step, true); });
    {
        // Written and freed before the optimizer state: the host holds one of them at a time.
        const std::vector<char> params = engine_.gather_params();
        on_root_agreed(&comm_, [&] { w->add_file("params.bin", params.data(), params.size()); });
    }
    on_all_agreed(&comm_, [&] {
        if (!root_) w = std::make_unique<CheckpointWriter>(ckpt_root_, step, false);
        w->add_file("optim-rank" + std::to_string(rank_) + ".bin", [&](AtomicFile& f) {
            write_optimizer(*opt_, mem_, [&](const void* p, size_t bytes) { f.write(p, bytes); });
        });
    });
    std::string dir;
    on_root_agreed(&comm_, [&] {
        if (!tokenizer_bytes_.empty()) w->add_file("tokenizer.bin", tokenizer_bytes_.data(), tokenizer_bytes_.size());
        const std::string spikes = spike_state_text(history_, spike_run_);
        w->add_file("spikes.json", spikes.data(), spikes.size());
        CheckpointMeta meta;
        meta.run_id = run_id_;
        meta.step = step;
        meta.applied_steps = applied_;
        meta.bad_steps = bad_steps_;
        meta.tokens_seen = tokens_seen_;
        meta.batch_tokens = step_tokens_;
        meta.world_size = world_;
        meta.zero_stage = o_.zero_stage;
        meta.unit_align = mo_.unit_align;
        meta.dtype = dtype_name(o_.dtype);
        meta.model = cfg_;
        meta.config = o_.to_json();
        meta.tokenizer_hash = tokenizer_hash_;
        meta.data = data_info_;
        meta.loader = loader_.state();
        dir = w->commit(meta);
        // The left branch's checkpoints older than this one (prune_checkpoints deletes the newer).
        std::vector<std::string> left;
        for (const CheckpointEntry& e : list_checkpoints(ckpt_root_))
            if (e.step < step && on_left_branch(e)) {
                left.push_back(std::filesystem::path(e.dir).filename().string());
                remove_checkpoint(e.dir);
            }
        if (!left.empty())
            log_info("deleted " + std::to_string(left.size()) + " checkpoint(s) between the resumed step " +
                     std::to_string(start_step_) + " and step " + std::to_string(step) + " (" + left.front() +
                     (left.size() > 1 ? " .. " + left.back() : "") + "): the branch this run left");
        // --keep-last never takes the checkpoint a spike after this save would roll back to.
        const int horizon = o_.spike.action == SpikeAction::rollback ? std::max(0, step + 1 - o_.spike.rollback_steps) : -1;
        prune_checkpoints(ckpt_root_, o_.keep_last, run_id_, step, horizon);
        log_->event("checkpoint", step, {{"dir", dir}});
    });
    last_good_ = root_ ? dir : latest_checkpoint(ckpt_root_);
    saved_step_ = step;
    left_branch_.clear();  // replaced or deleted: what this lineage holds now is this run's
    return last_good_;
}

// A skipped step is a step too: the tokens were consumed, and its checkpoint (the weights
// unchanged) is due like any other.
void Run::end_step(int done, TrainResult& result) {
    if (o_.checkpoint_every > 0 && done % o_.checkpoint_every == 0 && done != last_step_) result.last_checkpoint = save(done);
    result.steps_done = done;
    maybe_snapshot(done);
}

// The optimizer's kernels flag a non-finite value as they store it (Ops::take_nonfinite_update):
// a pass over the parameters here had cost as much as the gradient norm's. Stages 1-3 update
// disjoint shards, so every rank adds its verdict.
bool Run::params_finite() {
    double bad = ops_.take_nonfinite_update() ? 1 : 0;
    if (engine_.norm_is_partial()) bad = comm_.all_reduce_sum_host(bad);
    return bad == 0;
}

int Run::stop_signal() {
    for (double sig : comm_.all_gather_host({static_cast<double>(StopSignals::received())}))
        if (sig != 0) return static_cast<int>(sig);
    return 0;
}

void Run::interrupted(int step, int sig) {
    // Before the first step (a signal during set-up) nothing was trained: the resume point stays
    // the checkpoint resumed from, or none, and no checkpoint repeats it.
    const bool trained = iterations_ > 0;
    const std::string dir = !trained || saved_step_ == step ? last_good_ : save(step);
    stopped(step, {{"reason", "signal"}, {"signal", sig}, {"last_checkpoint", dir}}, false);
    if (tty_) std::fprintf(stderr, "\n");
    const std::string what = trained ? "after step " + std::to_string(step) + "; checkpoint " + dir + " written"
                                     : "before its first step; nothing was trained" +
                                           (dir.empty() ? std::string() : " since checkpoint " + dir);
    throw AgreedError("training", std::string("interrupted by ") + StopSignals::name(sig) + " " + what +
                                      ". To continue, run the same command with --resume latest");
}

float Run::learning_rate(int step, float& scheduled, bool& injected) {
    scheduled = sched_.lr_at(step);
    const LrInjection& inj = o_.spike.inject_lr;
    if (inj.step == step + 1 && !spike_run_.lr_fired) {
        spike_run_.lr_fired = true;
        spike_run_.lr_left = inj.steps;
        log_->event("inject", step + 1, {{"fault", "lr_spike"}, {"factor", inj.factor}, {"steps", inj.steps}});
    }
    injected = spike_run_.lr_left > 0;
    if (!injected) return scheduled;
    spike_run_.lr_left--;
    return static_cast<float>(scheduled * inj.factor);
}

void Run::fill_micro(int step, int micro, bool junk) {
    const int B = o_.batch, T = o_.seq_len;
    const size_t at = static_cast<size_t>(micro) * B * T;
    int32_t* in = step_inputs_.data() + at;
    int32_t* tg = step_targets_.data() + at;
    loader_.next(in, tg);
    const std::vector<uint64_t>& samples = loader_.last_samples();
    std::copy(samples.begin(), samples.end(), step_samples_.begin() + static_cast<long>(micro) * B);
    if (!junk) return;
    std::vector<int32_t> row(static_cast<size_t>(T) + 1);
    for (int b = 0; b < B; b++) {
        const uint64_t global_row = (static_cast<uint64_t>(micro) * world_ + rank_) * B + b;
        junk_row(o_.seed, step + 1, global_row, cfg_.vocab_size, row.data(), row.size());
        std::copy(row.begin(), row.end() - 1, in + static_cast<size_t>(b) * T);
        std::copy(row.begin() + 1, row.end(), tg + static_cast<size_t>(b) * T);
    }
}

void Run::note_attention(bool first) {
    const std::vector<float> m = model_.attention_max_logits();
    if (first) attention_now_ = m;
    else
        for (size_t l = 0; l < m.size(); l++) attention_now_[l] = std::max(attention_now_[l], m[l]);
}

Run::Snapshot Run::capture(int step) {
    Snapshot s;
    s.step = step;
    s.applied = applied_;
    s.bad_steps = bad_steps_;
    s.tokens_seen = tokens_seen_;
    s.loader = loader_.state();
    const size_t es = dtype_size(o_.dtype);
    size_t elems = 0;
    for (const ShardSpan& sp : engine_.shard()) elems += sp.count;
    s.params.resize(elems * es);
    for (const ShardSpan& sp : engine_.shard()) mem_.copy_to_host(s.params.data() + sp.local * es, engine_.param_at(sp), sp.count * es);
    s.optimizer = pack_optimizer(*opt_, mem_);
    s.history = history_.to_json();
    return s;
}

void Run::restore(const Snapshot& s) {
    const size_t es = dtype_size(o_.dtype);
    for (const ShardSpan& sp : engine_.shard()) mem_.copy_to_device(engine_.param_at(sp), s.params.data() + sp.local * es, sp.count * es);
    ops_.take_nonfinite_update();  // what an undone update stored is gone
    restore_packed_optimizer(*opt_, mem_, s.optimizer);
    applied_ = s.applied;
    bad_steps_ = s.bad_steps;
    tokens_seen_ = s.tokens_seen;
    history_.from_json(s.history, "snapshot");
    engine_.after_optimizer();  // stages 1-2: every rank's restored slice to everyone; 3: fresh gathers
}

void Run::maybe_snapshot(int step) {
    const int every = o_.spike.snapshot_every;
    if (o_.spike.action != SpikeAction::rollback || every <= 0 || step % every != 0) return;
    snapshots_.push_back(capture(step));
    // The next spike is at step + 1 or later and needs the newest snapshot at or before
    // (spike - --rollback-steps): older ones than that one can go.
    const int horizon = step + 1 - o_.spike.rollback_steps;
    size_t keep_from = 0;
    for (size_t i = 0; i < snapshots_.size(); i++)
        if (snapshots_[i].step <= horizon) keep_from = i;
    snapshots_.erase(snapshots_.begin(), snapshots_.begin() + static_cast<long>(keep_from));
}

int Run::rollback_target(int done, int& snapshot, std::string& checkpoint_dir) {
    const int limit = done - o_.spike.rollback_steps;
    snapshot = -1;
    checkpoint_dir.clear();
    int best = -1;
    for (size_t i = 0; i < snapshots_.size(); i++)
        if (snapshots_[i].step <= limit && snapshots_[i].step > best) {
            best = snapshots_[i].step;
            snapshot = static_cast<int>(i);
        }
    // Rank 0 picks the checkpoint; every rank learns its step.
    int ck_step = -1;
    if (root_)
        for (const CheckpointEntry& e : lineage_checkpoints())
            if (e.step <= limit) ck_step = std::max(ck_step, e.step);
    ck_step = static_cast<int>(comm_.all_reduce_sum_host(root_ ? ck_step + 1 : 0)) - 1;
    if (ck_step <= best) return best;
    snapshot = -1;
    for (const CheckpointEntry& e : lineage_checkpoints())
        if (e.step == ck_step) checkpoint_dir = e.dir;
    if (checkpoint_dir.empty()) throw Error(ckpt_root_, "the checkpoint of step " + std::to_string(ck_step) + " to roll back to vanished");
    return ck_step;
}

bool Run::on_left_branch(const CheckpointEntry& e) const {
    return e.run_id == run_id_ && std::find(left_branch_.begin(), left_branch_.end(), e.step) != left_branch_.end();
}

std::vector<CheckpointEntry> Run::lineage_checkpoints() const {
    std::vector<CheckpointEntry> found;
    for (const CheckpointEntry& e : list_checkpoints(ckpt_root_))
        if (e.complete && e.run_id == run_id_ && !on_left_branch(e)) found.push_back(e);
    if (ck_) {
        std::error_code ec;
        const std::filesystem::path from = checkpoint_path(ck_->dir());
        const std::filesystem::path parent = from.has_parent_path() ? from.parent_path() : ".";
        const int step = ck_->meta().step;
        const auto at = std::lower_bound(found.begin(), found.end(), step,
                                         [](const CheckpointEntry& x, int s) { return x.step < s; });
        if (!std::filesystem::equivalent(parent, ckpt_root_, ec) && std::filesystem::is_directory(from, ec) &&
            (at == found.end() || at->step != step))
            found.insert(at, CheckpointEntry{ck_->dir(), step, true, run_id_});
    }
    return found;
}

// The newest complete checkpoint of this lineage at or before `step`, and the one before it.
std::vector<std::string> Run::checkpoints_before(int step) const {
    std::vector<std::string> found;
    const std::vector<CheckpointEntry> all = lineage_checkpoints();
    for (auto it = all.rbegin(); it != all.rend() && found.size() < 2; ++it)
        if (it->step <= step) found.push_back(it->dir);
    return found;
}

std::vector<RowEvidence> Run::gathered_rows(int step, bool junk) {
    const int B = o_.batch, T = o_.seq_len;
    std::vector<double> mine;  // per row: sample, mean loss, max token loss
    for (int k = 0; k < accum_; k++)
        for (int b = 0; b < B; b++) {
            const float* tl = step_token_losses_.data() + (static_cast<size_t>(k) * B + b) * T;
            double sum = 0, worst = 0;
            for (int t = 0; t < T; t++) {
                sum += tl[t];
                worst = std::max(worst, static_cast<double>(tl[t]));
            }
            mine.insert(mine.end(), {static_cast<double>(step_samples_[static_cast<size_t>(k) * B + b]), sum / T, worst});
        }
    const std::vector<double> all = comm_.all_gather_host(mine);
    std::vector<RowEvidence> rows;
    const std::string junk_path = junk ? junk_shard_path(step + 1) : "";
    for (int r = 0; r < world_; r++)
        for (int k = 0; k < accum_; k++)
            for (int b = 0; b < B; b++) {
                const double* q = &all[((static_cast<size_t>(r) * accum_ + k) * B + b) * 3];
                const RowSource src = loader_.source_of(static_cast<uint64_t>(q[0]));
                RowEvidence e;
                e.rank = r;
                e.micro = k;
                e.row = b;
                e.shard = src.shard;
                e.offset = src.offset;
                e.loss = q[1];
                e.max_token_loss = q[2];
                if (junk) {
                    // The junk shard holds the rows in global order, T + 1 tokens each.
                    e.replaced = {{"shard", src.shard}, {"offset", src.offset}};
                    e.shard = junk_path;
                    e.offset = ((static_cast<uint64_t>(k) * world_ + r) * B + b) * (static_cast<uint64_t>(T) + 1);
                }
                rows.push_back(e);
            }
    return rows;
}

std::string Run::junk_shard_path(int done) const {
    std::string p = spike_report_path(o_.out_dir, done, spike_run_.rollbacks);
    return p.substr(0, p.size() - 5) + "-junk.bin";
}

void Run::write_spike_report(int done, const json& report, bool junk) {
    std::error_code ec;
    std::filesystem::create_directories(o_.out_dir + "/spikes", ec);
    if (ec) throw Error(o_.out_dir + "/spikes", "cannot create the spike-report directory: " + ec.message());
    if (junk) {
        const int T = o_.seq_len;
        const uint64_t rows = static_cast<uint64_t>(accum_) * world_ * o_.batch;
        std::vector<int32_t> row(static_cast<size_t>(T) + 1);
        std::vector<uint32_t> tokens;
        for (uint64_t i = 0; i < rows; i++) {
            junk_row(o_.seed, done, i, cfg_.vocab_size, row.data(), row.size());
            tokens.insert(tokens.end(), row.begin(), row.end());
        }
        write_shard(junk_shard_path(done), tokens, static_cast<size_t>(cfg_.vocab_size));
    }
    const std::string path = spike_report_path(o_.out_dir, done, spike_run_.rollbacks);
    write_file_atomically(path, report.dump(2) + "\n");
    write_file_atomically(path.substr(0, path.size() - 5) + ".txt", spike_report_text(report));
}

Run::SpikeOutcome Run::on_spike(int step, const SpikeVerdict& v, double loss, double local_loss, double norm,
                                const std::vector<double>& unit_norms, float lr, float scheduled_lr, bool lr_injected,
                                float scale, bool junk, int& next_step) {
    const int done = step + 1, B = o_.batch, T = o_.seq_len;
    const size_t micro_tokens = static_cast<size_t>(B) * T;
    // The determinism re-check: the same batches through the same weights (the gradients stay).
    double again_local = 0;
    for (int k = 0; k < accum_; k++)
        again_local += model_.forward(step_inputs_.data() + k * micro_tokens, step_targets_.data() + k * micro_tokens, B, T);
    const double again = comm_.all_reduce_sum_host(again_local / accum_) / world_;
    const bool same = comm_.all_reduce_sum_host(again_local == local_loss ? 0.0 : 1.0) == 0 && again == loss;

    // The update this step would make, measured by making it; skip and rollback undo it.
    Snapshot pre = capture(step);
    auto shard_weights = [&] {
        std::vector<float> w(opt_->size());
        if (opt_->has_master()) {
            mem_.copy_to_host(w.data(), opt_->master().get(), w.size() * 4);
            return w;
        }
        for (const ShardSpan& sp : engine_.shard()) {
            const std::vector<float> f = download_f32(mem_, engine_.param_at(sp), o_.dtype, sp.count);
            std::copy(f.begin(), f.end(), w.begin() + static_cast<long>(sp.local));
        }
        return w;
    };
    const std::vector<float> before = shard_weights();
    opt_->step(param_at_, grad_at_, lr, scale, applied_ + 1);
    const std::vector<double> partials =
        unit_update_partials(model_.layout(), engine_.shard(), unpack_optimizer(pre.optimizer, "snapshot").v, before, shard_weights());
    const std::vector<double> gathered = comm_.all_gather_host(partials);
    const std::vector<RowEvidence> rows = gathered_rows(step, junk);

    SpikeAction action = o_.spike.action;
    json rollback_info;
    int snapshot = -1, target = -1;
    std::string ck_dir;
    const bool out_of_rollbacks = action == SpikeAction::rollback && spike_run_.rollbacks >= o_.spike.max_rollbacks;
    if (action == SpikeAction::rollback && !out_of_rollbacks) {
        target = rollback_target(done, snapshot, ck_dir);
        if (target >= 0) {
            rollback_info = {{"to", target},
                             {"source", snapshot >= 0 ? "memory" : ck_dir},
                             {"batches_skipped", done - target + o_.spike.rollback_skip_batches}};
        } else {
            action = SpikeAction::skip;
            rollback_info = {{"done", false},
                             {"reason", "no state " + std::to_string(o_.spike.rollback_steps) +
                                            " steps before the spike to roll back to; the update was skipped"}};
        }
    } else if (out_of_rollbacks) {
        rollback_info = {{"done", false}, {"reason", "--max-rollbacks " + std::to_string(o_.spike.max_rollbacks) + " reached"}};
    }

    const std::string report_path = spike_report_path(o_.out_dir, done, spike_run_.rollbacks);
    on_root_agreed(&comm_, [&] {
        // A rerun after a rollback replaces the checkpoints newer than its target: the report
        // names ones that stay.
        const std::vector<std::string> cks = checkpoints_before(target >= 0 ? target : step);
        LrFacts f;
        f.lr = lr;
        f.scheduled_lr = scheduled_lr;
        f.base_lr = o_.schedule.lr;
        f.schedule = schedule_name(o_.schedule.kind);
        f.warmup = o_.schedule.warmup;
        f.step = done;
        f.steps = o_.steps;
        f.injected = lr_injected || history_.last_injected;
        json report{{"step", done},
                    {"action", spike_action_name(action)},
                    {"run", {{"run_id", run_id_},
                             {"report", report_path},
                             {"config", o_.to_json()},
                             {"model", cfg_.to_json()},
                             {"out", o_.out_dir},
                             {"train_data", o_.train_data},
                             {"seq_len", T},
                             {"batch", B},
                             {"world", world_},
                             {"accum", accum_},
                             {"seed", o_.seed},
                             {"shuffle", o_.shuffle},
                             {"dtype", dtype_name(o_.dtype)},
                             {"log", o_.log},
                             {"checkpoint_before", cks.size() > 0 ? json(cks[0]) : json(nullptr)},
                             {"checkpoint_earlier", cks.size() > 1 ? json(cks[1]) : json(nullptr)}}},
                    {"trigger", trigger_json(v, o_.spike.detect)},
                    {"learning_rate", learning_rate_json(f, history_)},
                    {"attention_logits", attention_json(attention_now_, history_)},
                    {"units", units_json(model_.layout(), unit_norms, history_, gathered, world_)},
                    {"batch", batch_json(T, rows, loss, history_, junk)},
                    {"determinism", {{"loss", loss}, {"loss_again", again}, {"bitwise_equal", same}}}};
        if (!rollback_info.is_null()) report["rollback"] = rollback_info;
        report["causes"] = rank_spike_causes(report);
        write_spike_report(done, report, junk);
    });
    json ev = trigger_json(v, o_.spike.detect);
    ev["action"] = spike_action_name(action);
    ev["report"] = report_path;
    log_->event("spike", done, ev);
    if (root_) {
        // Name what fired (as the log's "fired_on" does): a gradient-norm spike under a calm loss
        // is common and mild, and "loss spike" there had read as a loss that jumped.
        std::string what;
        for (const std::string& f : v.fired_on()) what += (what.empty() ? "" : " and ") + f;
        char line[160];
        std::snprintf(line, sizeof line, " (loss %.4f, z %.1f; grad norm %.3g, z %.1f): %s; report ", loss, v.loss.z, norm,
                      v.grad.z, out_of_rollbacks ? "stopping" : spike_action_name(action));
        log_warn("step " + std::to_string(done) + ": spike in " + what + line + report_path);
    }
    if (out_of_rollbacks) {
        stopped(done, {{"reason", "max_rollbacks"}, {"last_checkpoint", last_good_}}, true);
        throw AgreedError("training", "step " + std::to_string(done) + ": another spike after " + std::to_string(spike_run_.rollbacks) +
                                          " rollbacks (--max-rollbacks " + std::to_string(o_.spike.max_rollbacks) +
                                          "); stopped. See " + report_path + "; the last good checkpoint is " +
                                          (last_good_.empty() ? std::string("(none written)") : last_good_));
    }
    switch (action) {
        case SpikeAction::warn:
            bad_steps_ = 0;
            ++applied_;
            history_.applied(lr, scheduled_lr, lr_injected);
            return SpikeOutcome::applied;
        case SpikeAction::skip:
            restore(pre);
            skip(done, loss, norm, v.fired_on());
            return SpikeOutcome::skipped;
        case SpikeAction::rollback:
            break;
    }
    const LoaderState past = loader_.state();
    if (snapshot >= 0) restore(snapshots_[static_cast<size_t>(snapshot)]);
    else restore_checkpoint(CheckpointReader(ck_dir), false);
    // Snapshots of the abandoned steps go; the loader skips the batches around the spike.
    while (!snapshots_.empty() && snapshots_.back().step > target) snapshots_.pop_back();
    loader_.set_state(past);
    loader_.advance(static_cast<uint64_t>(o_.spike.rollback_skip_batches) * accum_);
    spike_run_.rollbacks++;
    spike_run_.lr_left = 0;
    // A checkpoint this process saved at the target step holds the loader position before the
    // skipped batches and the spike state before the rollback: a stop right now (a signal during
    // this step) must write a new one, not name that one.
    saved_step_ = -1;
    const int skipped = done - target + o_.spike.rollback_skip_batches;
    log_->event("rollback", done, {{"from", done},
                                   {"to", target},
                                   {"batches_skipped", skipped},
                                   {"tokens_skipped", static_cast<long long>(skipped) * step_tokens_},
                                   {"source", snapshot >= 0 ? "memory" : ck_dir},
                                   {"rollbacks", spike_run_.rollbacks}});
    if (root_)
        log_warn("step " + std::to_string(done) + ": rolled back to step " + std::to_string(target) + " (" +
                 (snapshot >= 0 ? std::string("in-memory snapshot") : ck_dir) + "), skipping " + std::to_string(skipped) +
                 " batches");
    next_step = target;
    return SpikeOutcome::rolled_back;
}

// The evaluations due after step `done` (every --eval-every steps and at the last): their events,
// and their numbers in the step's record. A skipped step is evaluated too (its record, which is
// not written, takes them in vain): the weights it left are the run's, and a run that ends on a
// skip reports their validation loss, not an earlier one.
void Run::evaluations(int done, json& rec, TrainResult& result) {
    if (o_.eval_every <= 0 || (done % o_.eval_every != 0 && done != last_step_)) return;
    // An evaluation's bytes (ZeRO-3's gathers of every unit) are its event's, not the step's.
    if (!task_items_.empty()) {
        const size_t eval_sent0 = comm_.bytes_sent_total();
        // A NaN loss loses every comparison, so weights that overflow would score the share of
        // items whose label is 0: logged null, as a non-finite validation loss is.
        bool finite = true;
        const HellaSwagScore hs = score_hellaswag(model_, *tok_, task_items_, [&](size_t, const HellaSwagResult& r) {
            for (double l : r.sum_loss) finite = finite && std::isfinite(l);
        });
        const json acc = finite ? json(hs.acc()) : json(), acc_norm = finite ? json(hs.acc_norm()) : json();
        rec["task_acc"] = acc;
        rec["task_acc_norm"] = acc_norm;
        log_->event("eval_task", done, {{"task", "hellaswag"}, {"items", hs.items}, {"acc", acc}, {"acc_norm", acc_norm},
                                        {"comm_bytes", comm_.bytes_sent_total() - eval_sent0}});
    }
    if (val_) {
        const size_t eval_sent0 = comm_.bytes_sent_total();
        result.last_val_loss = evaluate();
        rec["val_loss"] = result.last_val_loss;
        json ev{{"val_loss", result.last_val_loss},
                {"batches", eval_batches_},
                {"comm_bytes", comm_.bytes_sent_total() - eval_sent0}};
        // Not finite when the loss is not (JSON null): an earlier evaluation's is not this one's.
        if (val_bytes_) rec["val_bpb"] = ev["val_bpb"] = result.last_val_bpb = evaluated_bpb_;
        log_->event("eval", done, ev);
    }
}

TrainResult Run::go() {
    on_root_agreed(&comm_, [&] { write_header(); });  // a log that takes no writes (a full disk) stops every rank
    const int B = o_.batch, T = o_.seq_len;
    TrainResult result;
    const size_t micro_tokens = static_cast<size_t>(B) * T;
    step_inputs_.assign(micro_tokens * accum_, 0);
    step_targets_.assign(micro_tokens * accum_, 0);
    step_samples_.assign(static_cast<size_t>(B) * accum_, 0);
    step_token_losses_.assign(micro_tokens * accum_, 0.0f);
    std::vector<double> unit_norms;
    run_start_ = std::chrono::steady_clock::now();
    maybe_snapshot(start_step_);
    for (int step = start_step_; step < last_step_; iterations_++) {
        if (const int sig = stop_signal()) interrupted(step, sig);
        const auto t0 = std::chrono::steady_clock::now();
        profiler_.begin_step(step);
        const size_t sent0 = comm_.bytes_sent_total();
        const std::vector<size_t> sent_by_collective = comm_counters();
        const int done = step + 1;
        const bool junk = o_.spike.inject_junk_step == done && !spike_run_.junk_fired;
        if (junk) {
            spike_run_.junk_fired = true;
            log_->event("inject", done, {{"fault", "junk_batch"}});
        }
        float scheduled_lr = 0;
        bool lr_injected = false;
        const float lr = learning_rate(step, scheduled_lr, lr_injected);
        engine_.begin_step();
        model_.zero_grad();
        double local_loss = 0;
        for (int micro = 0; micro < accum_; micro++) {
            engine_.set_last_micro(micro == accum_ - 1);
            // A profiler region lasts to the end of its statement.
            profiler_.region(ProfileRegion::data), fill_micro(step, micro, junk);
            const size_t at = static_cast<size_t>(micro) * micro_tokens;
            local_loss += model_.forward(step_inputs_.data() + at, step_targets_.data() + at, B, T, true,
                                         1.0f / static_cast<float>(accum_ * world_));
            const std::vector<float>& tl = model_.token_losses();
            std::copy(tl.begin(), tl.end(), step_token_losses_.begin() + static_cast<long>(at));
            note_attention(micro == 0);
            model_.backward();
        }
        if (world_ > 1) {
            const size_t L = attention_now_.size();
            const std::vector<double> all = comm_.all_gather_host(std::vector<double>(attention_now_.begin(), attention_now_.end()));
            for (int r = 0; r < world_; r++)
                for (size_t l = 0; l < L; l++) attention_now_[l] = std::max(attention_now_[l], static_cast<float>(all[r * L + l]));
        }
        if (o_.test_gradient_hook) o_.test_gradient_hook(done, engine_.grad_at(engine_.shard()[0]), engine_.shard()[0].count);
        const double loss = comm_.all_reduce_sum_host(local_loss / accum_) / world_;
        const double norm = global_grad_norm(unit_norms);
        tokens_seen_ += static_cast<uint64_t>(step_tokens_);
        if (!std::isfinite(loss) || !std::isfinite(norm)) {
            skip(done, loss, norm);
            result.last_loss = loss;  // the summary's loss is the last step's, not a stale one
            json unused;
            evaluations(done, unused, result);
            end_step(done, result);
            step = done;
            continue;
        }
        const float scale = (o_.grad_clip > 0 && norm > o_.grad_clip) ? static_cast<float>(o_.grad_clip / norm) : 1.0f;
        const SpikeVerdict verdict = history_.detector.check(loss, norm);
        // The loss and norm are the same reduced values everywhere; the vote makes sure.
        const bool spiked = comm_.all_reduce_sum_host(verdict.fired() ? 1.0 : 0.0) > 0;
        if (spiked) {
            int next = done;
            const SpikeOutcome out = on_spike(step, verdict, loss, local_loss, norm, unit_norms, lr, scheduled_lr, lr_injected,
                                              scale, junk, next);
            if (out == SpikeOutcome::rolled_back) {
                result.rollbacks++;
                step = next;
                continue;
            }
            if (out == SpikeOutcome::skipped) {
                result.last_loss = loss;  // as for a non-finite skip: the last step's
                json unused;
                evaluations(done, unused, result);
                end_step(done, result);
                step = done;
                continue;
            }
        } else {
            bad_steps_ = 0;
            history_.accept(loss, norm, unit_norms, attention_now_);
            profiler_.region(ProfileRegion::optimizer), opt_->step(param_at_, grad_at_, lr, scale, ++applied_);
            history_.applied(lr, scheduled_lr, lr_injected);
        }
        if (!params_finite()) {
            stopped(done, {{"reason", "non_finite_parameters"}, {"last_checkpoint", last_good_}}, true);
            char lr_text[32];
            std::snprintf(lr_text, sizeof lr_text, "%g", lr);
            throw AgreedError("training", "step " + std::to_string(done) + ": the update made parameters non-finite (learning rate " +
                                              lr_text + ", --weight-decay too high?); stopped without saving them. The last good "
                                              "checkpoint is " + (last_good_.empty() ? std::string("(none written)") : last_good_));
        }
        profiler_.region(ProfileRegion::comm), engine_.after_optimizer();
        mem_.sync();

        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        profiler_.end_step(secs);
        const double flops = fpt_.model * static_cast<double>(step_tokens_);
        // MFU is per device: each of the `world` devices did 1/world of the work.
        const double per_device_s = static_cast<double>(step_tokens_) / world_ / secs;
        const double mfu = peak_.flops_per_s > 0 ? fpt_.model * per_device_s / peak_.flops_per_s : 0;
        const double hfu = peak_.flops_per_s > 0 ? fpt_.hardware * per_device_s / peak_.flops_per_s : 0;
        result.losses.push_back(static_cast<float>(loss));
        result.last_loss = loss;
        json rec{{"type", "step"},           {"step", done},
                 {"loss", loss},             {"lr", float_as_decimal(lr)},
                 {"grad_norm", norm},        {"clip_scale", scale},
                 {"tokens", tokens_seen_},   {"step_ms", secs * 1e3},
                 {"tokens_per_s", step_tokens_ / secs}, {"flops", flops},
                 {"mfu", mfu},               {"hfu", hfu},
                 {"comm_bytes", comm_.bytes_sent_total() - sent0},
                 {"memory", memory_json(mem_.ledger())}};
        if (be_.device == "cuda") rec["memory"]["device_in_use"] = device_bytes_in_use(be_);
        if (world_ > 1) {
            rec["memory_ranks"] = gathered_memory();
            rec["comm_ranks"] = gathered_comm(sent_by_collective);
        }
        evaluations(done, rec, result);
        log_->write(rec);
        if (root_ && mfu > 1.0 && !mfu_over_peak_warned_) {
            mfu_over_peak_warned_ = true;
            log_warn("step " + std::to_string(done) + ": MFU " + std::to_string(int(mfu * 100 + 0.5)) +
                     "% is above the peak it is measured against (" + peak_.source +
                     "): the device runs faster than that peak assumes, so MFU reads high; --peak-tflops sets the peak");
        }
        progress(done, loss, norm, lr, secs, mfu);
        sample(done);
        end_step(done, result);
        step = done;
    }
    if (tty_) std::fprintf(stderr, "\n");
    result.skipped_at_end = bad_steps_;
    if (root_ && bad_steps_ > 0)
        log_warn("the run ended on " + std::to_string(bad_steps_) + " skipped step" + (bad_steps_ > 1 ? "s" : "") +
                 " in a row (non-finite or spikes): its last checkpoint holds the weights after step " +
                 std::to_string(result.steps_done - bad_steps_) + ", which no later step could update (a lower --lr?)");
    if (result.steps_done > 0) result.last_checkpoint = save(result.steps_done);
    finish(iterations_);
    return result;
}

// The profile (--profile) and the bill: log events, OUT/profile.json, summary lines.
void Run::finish(int steps_run) {
    write_profile(last_step_);
    bill(last_step_, steps_run);
}

void Run::stopped(int step, const json& why, bool computed_this_step) {
    log_->event("stop", step, why);
    // Stopped before any profiled step ended, there is nothing to report: the end's warning would
    // call the steps it never ran skipped, and the roof would be measured for nothing.
    if (profiler_.profiled_any()) write_profile(step);
    bill(step, iterations_ + (computed_this_step ? 1 : 0));
}

void Run::write_profile(int step) {
    if (!profiler_.enabled() || !root_) return;
    const double step_tokens = static_cast<double>(step_tokens_);
    const json rep = profiler_.report(machine_roof(be_, peak_), {fpt_.model * step_tokens, fpt_.hardware * step_tokens, world_, peak_.flops_per_s});
    if (rep.is_null()) return;
    write_file_atomically(o_.out_dir + "/profile.json", rep.dump(2) + "\n");
    log_->event("profile", step, {{"path", o_.out_dir + "/profile.json"}, {"mfu", rep.at("mfu")}, {"hfu", rep.at("hfu")}});
    std::fprintf(stderr, "%s", StepProfiler::table(rep).c_str());
}

// What the run cost: its wall-clock device time, FLOPs and MFU (a log event and one line).
void Run::bill(int step, int steps_run) {
    const double step_tokens = static_cast<double>(step_tokens_);
    Bill b;
    b.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
    b.devices = world_;
    b.model_flops = fpt_.model * step_tokens * steps_run;
    b.hw_flops = fpt_.hardware * step_tokens * steps_run;
    b.peak_flops = peak_.flops_per_s;
    b.price_per_device_hour = o_.price_per_device_hour;
    log_->event("bill", step, b.to_json());
    if (root_) log_info(b.summary());
}

}  // namespace

uint32_t sample_start_token(const Tokenizer& tok, const std::string& path) {
    const auto eot = tok.special_id("<|endoftext|>");
    if (!eot) throw Error("--sample-every", path + " has no <|endoftext|> special token to start a sample from");
    return *eot;
}

TrainResult train(const TrainOptions& o, const GPTConfig& config, std::vector<float> params, Comm* comm) {
    o.validate(comm ? comm->size() : 1);
    return Run(o, config, std::move(params), comm).go();
}

}  // namespace sixnd
