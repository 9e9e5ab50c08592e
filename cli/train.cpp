// sixnd train: flags -> TrainOptions -> train(). The last stdout line is a JSON summary.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/train_flags.h"
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
#include "train/run_log.h"
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
// of the environment that pick the CPU kernels. `device` is --device resolved.
static std::vector<std::pair<std::string, std::string>> flag_settings(const TrainOptions& o, const ModelFlags& mf,
                                                                      const std::string& device) {
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
    TrainFlags f;
    add_train_flags(app, f);
    ModelFlags& mf = f.model;
    TrainOptions& o = f.options;
    if (!parse_flags(app, argc, argv)) return 0;
    check_model_flags(app, mf);
    o.model_flags_given = mf.given;
    o.device = mf.device;
    o.dtype = parse_dtype(mf.dtype);
    o.attention = parse_attention(mf.attention);
    o.recompute = parse_recompute(f.recompute);
    o.seed = mf.seed;
    o.shuffle = parse_on_off("--shuffle", f.shuffle);
    o.schedule.kind = parse_schedule(f.schedule);
    o.optimizer.master_weights = parse_on_off("--master-weights", f.master);
    o.optimizer.kind = parse_optimizer(f.optimizer);
    o.spike.action = parse_spike_action(f.on_spike);
    if (app.count("--inject-lr-spike")) o.spike.inject_lr = parse_lr_injection(f.inject_lr);
    // Every knob is checked before MPI starts or a model is built; the batch rule needs the
    // world size, which mpirun's environment tells.
    o.validate(launched_world_size());
    refuse_left_out_values(app, o);
    // The paths the run writes, as far as they can be judged without writing: --out, --log.
    if (f.check_only) check_run_dir(o.out_dir);
    // The model the flags make is the run's unless a checkpoint is resumed, which brings its own.
    const bool fresh = o.resume.empty() || (o.resume == "latest" && latest_checkpoint(o.out_dir + "/checkpoints").empty());
    // --init's file is read here for --check alone; a run reads it once, when it builds the model.
    if (fresh && (mf.init == "random" || f.check_only)) {
        const GPTConfig c = mf.init == "random" ? random_config(mf) : initial_model(mf).config;
        c.require_seq_len(o.seq_len);
        // What the run refuses at its start, --check refuses now (an ablation of --vocab-size
        // learns it before its first run, not after): a tokenizer with ids the model has no row for.
        if (f.check_only && !o.tokenizer.empty()) {
            const Tokenizer tok = Tokenizer::load(o.tokenizer);
            require_model_vocab(tok, o.tokenizer, c.vocab_size);
            if (o.sample_every > 0) sample_start_token(tok, o.tokenizer);
        }
    }
    if (f.check_only) check_run_log_path(o.log, RunLogOwner{!fresh, o.out_dir, o.overwrite});
    cpu_features();  // a bad SIXND_CPU_ISA is refused here, before the run directory is touched
    // The run would refuse --device cuda in a build without CUDA or with no usable GPU; auto is
    // not resolved here, since a GPU it cannot use is warned of, and --check prints no warnings.
    if (f.check_only && mf.device == "cuda") resolve_device(mf.device);
    if (f.check_only) return 0;  // sixnd ablate checks every run's flags so before the first run starts

    // Under mpirun: MPI between CPU processes, NCCL between GPUs (one per local rank).
    std::unique_ptr<Comm> comm;
    std::string device;
    if (launched_under_mpi()) {
        device = resolve_device(mf.device);
        comm = device == "cuda" ? make_nccl_comm() : make_mpi_comm();
        share_cores();
    }

    if (!comm || comm->rank() == 0) {
        if (app.count("--master-weights") && o.dtype == DType::f32)
            log_warn("--master-weights " + f.master + " has no effect with --dtype fp32: FP32 parameters are their own master copy");
        for (const std::string& w : o.inert_settings()) log_warn(w);
    }

    TrainResult r;
    try {
        if (comm) check_ranks_agree(*comm, made_on_all<std::vector<std::pair<std::string, std::string>>>(comm.get(), [&] {
                                           return flag_settings(o, mf, device);
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
