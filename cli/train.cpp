// sixnd train: flags -> TrainOptions -> train(). The last stdout line is a JSON summary.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/on_off.h"
#include "cli/verbs.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/local_rank.h"
#include "core/log.h"
#include "dist/comm.h"
#include "dist/rank_agreement.h"
#include "model/backend.h"
#include "model/ops.h"
#include "train/checkpoint.h"
#include "train/run_dir.h"
#include "train/tokenizer_match.h"
#include "train/trainer.h"

namespace sixnd::cli {

// Ranks on one machine split its cores, unless OMP_NUM_THREADS says otherwise.
static void share_cores() {
    if (std::getenv("OMP_NUM_THREADS")) return;
    omp_set_num_threads(std::max(1, omp_get_num_procs() / local_process_count()));
}

static std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// What every rank of a job must agree on: the settings the run log's header records, and the
// flags it does not hold (the model's, where the log goes, what is resumed), and the switches
// of the environment that pick the CPU kernels.
static std::vector<std::pair<std::string, std::string>> flag_settings(const TrainOptions& o, const ModelFlags& mf) {
    std::vector<std::pair<std::string, std::string>> settings;
    const nlohmann::json recorded = o.to_json();
    for (const auto& [key, value] : recorded.items()) {
        std::string flag = "--" + key;
        std::replace(flag.begin(), flag.end(), '_', '-');
        settings.emplace_back(flag, value.dump());
    }
    const nlohmann::json more = {{"--init", mf.init},
                                 {"--model", mf.model},
                                 {"--vocab-size", mf.vocab_size},
                                 {"--max-seq-len", mf.max_seq_len},
                                 {"--n-layer", mf.n_layer},
                                 {"--n-head", mf.n_head},
                                 {"--n-embd", mf.n_embd},
                                 {"--n-kv-head", mf.n_kv_head},
                                 {"--mlp-hidden", mf.mlp_hidden},
                                 {"--pos", mf.pos},
                                 {"--rope-theta", mf.rope_theta},
                                 {"--norm", mf.norm},
                                 {"--mlp", mf.mlp},
                                 {"--qk-norm", mf.qk_norm},
                                 {"--tie-embeddings", mf.tie_embeddings},
                                 {"--bias", mf.bias},
                                 {"--resume", o.resume},
                                 {"--log", o.log},
                                 {"--peak-tflops", o.peak_tflops},
                                 // They choose the CPU kernels, and so the numerics, of each rank.
                                 {"SIXND_CPU_ISA", env_or_empty("SIXND_CPU_ISA")},
                                 {"SIXND_BF16_MATMUL", env_or_empty("SIXND_BF16_MATMUL")}};
    for (const auto& [flag, value] : more.items()) settings.emplace_back(flag, value.dump());
    // What each rank runs on, not only what it was told: ranks on nodes of other CPUs (or one
    // without the GPU the others have) would compute the same step with other roundings.
    const std::string device = resolve_device(o.device);
    const CpuFeatures& cpu = cpu_features();
    settings.emplace_back("the device", device);
    const std::string bf16 = cpu.bf16_matmul_native() ? ", BF16 dot products" : ", BF16 on FP32 FMAs";
    settings.emplace_back("the CPU's kernels", device == "cpu" ? cpu.flags() + bf16 : "");
    return settings;
}

// Values that stand for the flag left out, which the run would read as such if given: 0 for
// the flags below, and an empty value (no --log, no --tokenizer, the preset's --norm).
static void refuse_left_out_values(const CLI::App& app, const TrainOptions& o) {
    refuse_empty_values(app);
    const struct {
        const char* flag;
        bool zero;
        const char* why;
    } zeros[] = {
        {"--peak-tflops", o.peak_tflops == 0, "must be > 0 (leave it out for the device's peak), got 0"},
        {"--price-per-device-hour", o.price_per_device_hour == 0, "must be > 0 (leave it out for a bill without a price), got 0"},
        {"--inject-junk-batch", o.spike.inject_junk_step == 0, "STEP must be between 1 and --steps, got 0"},
    };
    for (const auto& z : zeros)
        if (z.zero && app.count(z.flag) > 0) throw Error(z.flag, z.why);
}

int run_train(int argc, char** argv) {
    CLI::App app{"Train a GPT on llm.c token shards", "sixnd train"};
    std::string config;
    app.add_option("--config", config, "read flags from a file: key = value lines, the flags' names, optionally under [train]");
    ModelFlags mf;
    add_model_flags(app, mf);
    TrainOptions o;
    std::string recompute = "none", shuffle = "on", schedule = "cosine", master = "on", optimizer = "adamw";
    app.add_option("--recompute", recompute, "none, selective or full")->capture_default_str();
    app.add_option("--zero", o.zero_stage, "ZeRO stage 0-3 (under mpirun)")->capture_default_str();
    app.add_option("--train-data", o.train_data, "glob of llm.c token shards, or DIR/manifest.json of sixnd data prepare")->required();
    app.add_option("--val-data", o.val_data, "glob of validation shards, or DIR/manifest.json:val");
    app.add_option("--shuffle", shuffle, "on or off")->capture_default_str();
    app.add_option("--batch", o.batch, "micro-batch size B per process")->capture_default_str();
    app.add_option("--seq-len", o.seq_len, "sequence length T")->capture_default_str();
    app.add_option("--total-batch-tokens", o.total_batch_tokens, "tokens per optimizer step (gradient accumulation); default B*T*ranks");
    app.add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
    app.add_option("--stop-at", o.stop_at, "stop after this step with a checkpoint; the schedule still spans --steps");
    app.add_option("--lr", o.schedule.lr, "peak learning rate")->capture_default_str();
    app.add_option("--schedule", schedule, "constant, cosine or wsd")->capture_default_str();
    app.add_option("--warmup", o.schedule.warmup, "linear warm-up steps")->capture_default_str();
    app.add_option("--final-lr-frac", o.schedule.final_frac,
                   "where cosine and wsd decay to, as a fraction of --lr (reached one step past the last)")->capture_default_str();
    app.add_option("--weight-decay", o.optimizer.weight_decay, "decoupled weight decay (matrices only)")->capture_default_str();
    app.add_option("--beta1", o.optimizer.beta1)->capture_default_str();
    app.add_option("--beta2", o.optimizer.beta2)->capture_default_str();
    app.add_option("--eps", o.optimizer.eps)->capture_default_str();
    app.add_option("--optimizer", optimizer, "adamw, or muon: Muon for the blocks' matrices, AdamW for the rest")->capture_default_str();
    app.add_option("--muon-lr", o.optimizer.muon_lr, "Muon's peak learning rate (scheduled like --lr)")->capture_default_str();
    app.add_option("--muon-momentum", o.optimizer.muon_momentum, "Muon's Nesterov momentum")->capture_default_str();
    app.add_option("--muon-weight-decay", o.optimizer.muon_weight_decay, "Muon's decoupled weight decay")->capture_default_str();
    app.add_option("--grad-clip", o.grad_clip, "global gradient-norm clip (0 = off)")->capture_default_str();
    app.add_option("--master-weights", master, "keep FP32 master weights for BF16 parameters: on or off")->capture_default_str();
    app.add_option("--out", o.out_dir, "run directory (checkpoints go to OUT/checkpoints; locked while the run writes it)")->capture_default_str();
    app.add_flag("--overwrite", o.overwrite, "start a fresh run in an --out holding another run's checkpoints, deleting them");
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
    app.add_option("--sample-tokens", o.sample_tokens, "tokens per --sample-every sample (at most the context)")->capture_default_str();
    app.add_option("--max-bad-steps", o.max_bad_steps, "stop after this many non-finite steps in a row")->capture_default_str();
    std::string on_spike = "warn", inject_lr;
    app.add_option("--spike-window", o.spike.detect.window, "loss-spike detection: steps in the rolling window (it fires once the window is full)")->capture_default_str();
    app.add_option("--spike-z-loss", o.spike.detect.z_loss, "a loss this many standard deviations above the window's mean is a spike (0: off)")->capture_default_str();
    app.add_option("--spike-z-grad", o.spike.detect.z_grad, "a gradient norm this many standard deviations above the window's mean is a spike (0: off)")->capture_default_str();
    app.add_option("--on-spike", on_spike, "warn (report only), skip (drop the update) or rollback (to an earlier state, skipping batches)")->capture_default_str();
    app.add_option("--rollback-steps", o.spike.rollback_steps, "roll back to the newest state at least this many steps before the spike")->capture_default_str();
    app.add_option("--rollback-skip-batches", o.spike.rollback_skip_batches, "after a rollback, also skip this many batches past the spike's")->capture_default_str();
    app.add_option("--snapshot-every", o.spike.snapshot_every, "keep an in-memory state to roll back to every N steps (0: roll back to checkpoints on disk)")->capture_default_str();
    app.add_option("--max-rollbacks", o.spike.max_rollbacks, "stop the run at a spike after this many rollbacks")->capture_default_str();
    app.add_option("--inject-lr-spike", inject_lr, "fault injection: STEP:FACTOR[:STEPS] multiplies the learning rate by FACTOR for STEPS steps (default 1) from STEP");
    app.add_option("--inject-junk-batch", o.spike.inject_junk_step, "fault injection: replace step STEP's batch by uniform random tokens");
    app.add_option("--peak-tflops", o.peak_tflops, "override the peak TFLOP/s used for MFU");
    app.add_option("--profile", o.profile, "time every op over N steps (after the first): roofline table, OUT/profile.json");
    app.add_option("--price-per-device-hour", o.price_per_device_hour, "dollars per device-hour, for the bill every run ends with");
    app.add_option("--tokenizer", o.tokenizer, "sixnd tokenizer file the shards were made with (stored in checkpoints)");
    bool check_only = false;
    app.add_flag("--check", check_only, "check the flags (ranges, combinations, the model they make), then exit without reading data or checkpoints or writing anything");
    if (!parse_flags(app, argc, argv)) return 0;
    check_model_flags(app, mf);
    o.model_flags_given = mf.given;
    o.device = mf.device;
    o.dtype = parse_dtype(mf.dtype);
    o.attention = parse_attention(mf.attention);
    o.recompute = parse_recompute(recompute);
    o.seed = mf.seed;
    o.shuffle = parse_on_off("--shuffle", shuffle);
    o.schedule.kind = parse_schedule(schedule);
    o.optimizer.master_weights = parse_on_off("--master-weights", master);
    o.optimizer.kind = parse_optimizer(optimizer);
    o.spike.action = parse_spike_action(on_spike);
    if (app.count("--inject-lr-spike")) o.spike.inject_lr = parse_lr_injection(inject_lr);
    // Every knob is checked before MPI starts or a model is built; the batch rule needs the
    // world size, which mpirun's environment tells.
    o.validate(launched_world_size());
    refuse_left_out_values(app, o);
    // The model the flags make is the run's unless a checkpoint is resumed, which brings its own.
    const bool fresh = o.resume.empty() || (o.resume == "latest" && latest_checkpoint(o.out_dir + "/checkpoints").empty());
    if (mf.init == "random" && fresh) {
        const GPTConfig c = random_config(mf);
        c.require_seq_len(o.seq_len);
        // What the run refuses at its start, --check refuses now (an ablation of --vocab-size
        // learns it before its first run, not after): a tokenizer with ids the model has no row for.
        if (check_only && !o.tokenizer.empty()) require_model_vocab(Tokenizer::load(o.tokenizer), o.tokenizer, c.vocab_size);
    }
    cpu_features();  // a bad SIXND_CPU_ISA is refused here, before the run directory is touched
    if (check_only) return 0;  // sixnd ablate checks every run's flags so before the first run starts

    // Under mpirun: MPI between CPU processes, NCCL between GPUs (one per local rank).
    std::unique_ptr<Comm> comm;
    if (launched_under_mpi()) {
        comm = resolve_device(mf.device) == "cuda" ? make_nccl_comm() : make_mpi_comm();
        share_cores();
    }

    if (!comm || comm->rank() == 0) {
        if (app.count("--master-weights") && o.dtype == DType::f32)
            log_warn("--master-weights " + master + " has no effect with --dtype fp32: FP32 parameters are their own master copy");
        for (const std::string& w : o.inert_settings()) log_warn(w);
    }

    TrainResult r;
    try {
        if (comm) check_ranks_agree(*comm, made_on_all<std::vector<std::pair<std::string, std::string>>>(comm.get(), [&] {
                                           return flag_settings(o, mf);
                                       }));
        // With --resume the checkpoint's model replaces this one; it is still built so that
        // `--resume latest` on a fresh run directory starts from --init.
        InitialModel im = made_on_all<InitialModel>(comm.get(), [&] { return initial_model(mf); });
        r = train(o, im.config, std::move(im.params), comm.get());
    } catch (const std::exception& e) {
        if (!comm) throw;
        const bool agreed = dynamic_cast<const AgreedError*>(&e) != nullptr;
        if (agreed ? comm->rank() == 0 : comm->says_failure(e.what())) print_error("train", e);
        throw ErrorPrinted{};  // ~comm while unwinding: the ranks leave MPI together (dist/comm.h)
    }
    if (comm && comm->rank() != 0) return 0;
    nlohmann::json out{{"steps", r.steps_done}, {"loss", r.last_loss}, {"checkpoint", r.last_checkpoint}, {"log", o.log}};
    if (r.skipped_at_end > 0) out["skipped_at_end"] = r.skipped_at_end;
    // -1: never evaluated; NaN (JSON null): the last evaluation was not finite.
    if (!(r.last_val_loss < 0)) out["val_loss"] = r.last_val_loss;
    if (!(r.last_val_bpb < 0)) out["val_bpb"] = r.last_val_bpb;
    std::printf("%s\n", out.dump().c_str());
    return 0;
}

}  // namespace sixnd::cli
