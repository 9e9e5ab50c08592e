#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/read_file.h"
#include "core/transfer.h"
#include "data/loader.h"
#include "dist/zero.h"
#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/bill.h"
#include "train/bits_per_byte.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "train/hellaswag.h"
#include "train/muon.h"
#include "train/peak_flops.h"
#include "train/profile.h"
#include "train/run_dir.h"
#include "train/run_log.h"
#include "train/spike_detector.h"
#include "train/stop_signal.h"

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
                {"lr", schedule.lr},
                {"schedule", schedule_name(schedule.kind)},
                {"warmup", schedule.warmup},
                {"final_lr_frac", schedule.final_frac},
                {"weight_decay", optimizer.weight_decay},
                {"beta1", optimizer.beta1},
                {"beta2", optimizer.beta2},
                {"eps", optimizer.eps},
                {"master_weights", optimizer.master_weights},
                {"optimizer", optimizer_name(optimizer.kind)},
                {"muon_lr", optimizer.muon_lr},
                {"muon_momentum", optimizer.muon_momentum},
                {"muon_weight_decay", optimizer.muon_weight_decay},
                {"grad_clip", grad_clip},
                {"out", out_dir},
                {"overwrite", overwrite},
                {"allow_resume_changes", allow_resume_changes},
                {"checkpoint_every", checkpoint_every},
                {"keep_last", keep_last},
                {"eval_every", eval_every},
                {"eval_batches", eval_batches},
                {"eval_task", eval_task},
                {"max_bad_steps", max_bad_steps},
                {"tokenizer", tokenizer},
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

std::string format_duration(double s) {
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", int(s / 3600), int(std::fmod(s, 3600) / 60));
    else if (s >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s / 60), int(std::fmod(s, 60)));
    else std::snprintf(buf, sizeof buf, "%.0fs", s);
    return buf;
}

json data_json(const TokenSet& ts) {
    json shards = json::array();
    std::string ident;
    for (const auto& s : ts.shards()) {
        shards.push_back({{"path", s.path()}, {"tokens", s.size()}});
        ident += s.path() + ":" + std::to_string(s.size()) + ";";
    }
    return json{{"pattern", ts.pattern()}, {"tokens", ts.size()}, {"shards", shards},
                {"hash", hex64(xxh64_bytes(ident.data(), ident.size()))}};
}

}  // namespace

namespace {

// One training run: everything train() sets up, and the loop over steps, one method a part.
class Run {
public:
    Run(const TrainOptions& o, const GPTConfig& config, const std::vector<float>& params, Comm* comm);
    TrainResult go();

private:
    static std::unique_ptr<CheckpointReader> open_resume(const TrainOptions& o);
    static ModelOptions model_options(const TrainOptions& o, int world);
    void load_initial_state(const std::vector<float>& params);
    // What the checkpoint fixes against what this run asks for; returns the loader position to
    // start from. Throws on a conflict unless --allow-resume-changes.
    LoaderState resume_position();
    void end_step(int done, TrainResult& result);
    // Whether every parameter is finite after an update; every rank gets the same answer.
    bool params_finite();
    // Whether any rank has received SIGINT/SIGTERM; every rank gets the same answer.
    bool stop_requested();
    // Saves (unless step is saved already) and throws the error that says how to resume.
    [[noreturn]] void interrupted(int step);
    void check_tokenizer();
    void write_header();
    double global_grad_norm();
    // Logs the skipped step; throws once --max-bad-steps in a row are reached.
    void skip(int done, double loss, double norm);
    void progress(int done, double loss, double norm, float lr, double secs, double mfu);
    float evaluate();
    json gathered_memory();
    // Every rank's bytes sent this step, by collective (sent_before: the counters at its start).
    json gathered_comm(const std::vector<size_t>& sent_before);
    std::vector<size_t> comm_counters() const;
    std::string save(int step);
    void finish(int steps_run);

    const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();  // for the bill
    const TrainOptions& o_;
    const std::string ckpt_root_;
    std::unique_ptr<RunDirLock> lock_;  // held by rank 0 for the whole run
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
    uint64_t tokens_seen_ = 0;
    std::string tokenizer_hash_, tokenizer_bytes_;
    Schedule sched_;
    FlopsPerToken fpt_;
    PeakFlops peak_;
    json data_info_;
    std::unique_ptr<RunLog> log_;
    bool tty_ = false;
    std::chrono::steady_clock::time_point run_start_;
    float evaluated_ = 0;  // the last validation loss
    // Validation bits per byte (issue 16): needs --tokenizer to count the bytes of the decoded
    // validation tokens; -1 when there is none.
    std::unique_ptr<TokenBytes> val_bytes_;
    double evaluated_bpb_ = -1;
    // --eval-task: every rank scores every item (the forward passes stay collective under
    // ZeRO-3); rank 0 logs the accuracies.
    std::vector<HellaSwagItem> task_items_;
    std::unique_ptr<Tokenizer> task_tok_;
    std::string run_id_;     // the lineage (CheckpointMeta::run_id)
    std::string last_good_;  // the newest checkpoint this lineage saved or resumed from
    int saved_step_ = -1;    // the step of the newest checkpoint saved in this process
};

std::unique_ptr<CheckpointReader> Run::open_resume(const TrainOptions& o) {
    if (o.resume.empty()) return nullptr;
    const std::string root = o.out_dir + "/checkpoints";
    std::string dir = o.resume;
    if (o.resume == "latest") {
        // The newest complete checkpoint; newer incomplete ones (no DONE) are named, not used.
        dir.clear();
        std::string incomplete;
        const std::vector<CheckpointEntry> all = list_checkpoints(root);
        for (auto it = all.rbegin(); it != all.rend() && dir.empty(); ++it) {
            if (it->complete) dir = it->dir;
            else incomplete += (incomplete.empty() ? "" : ", ") + std::filesystem::path(it->dir).filename().string();
        }
        if (dir.empty() && !incomplete.empty())
            throw Error("--resume", "latest: " + root + " holds only incomplete checkpoints (" + incomplete +
                                        ": no DONE marker); nothing to resume from");
        if (dir.empty()) {
            log_info("--resume latest: no checkpoint under " + root + "; starting fresh");
            return nullptr;
        }
        if (!incomplete.empty())
            log_warn("--resume latest: skipping incomplete checkpoint " + incomplete + " (no DONE marker); resuming from " + dir);
    }
    auto ck = std::make_unique<CheckpointReader>(dir);
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

Run::Run(const TrainOptions& o, const GPTConfig& config, const std::vector<float>& params, Comm* comm)
    : o_(o),
      ckpt_root_(o.out_dir + "/checkpoints"),
      lock_(lock_run_dir(o.out_dir, comm)),
      ck_(open_resume(o)),
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
      loader_(o.train_data, o.batch, o.seq_len, rank_, world_, o.shuffle, o.seed) {
    model_.set_hooks(profiler_.hooks(&engine_));
    if (ck_ && o.model_flags_given && (cfg_.describe() != config.describe()))
        throw Error("--resume", ck_->dir() + " holds the model " + cfg_.describe() + "; the model flags ask for " +
                                    config.describe() + ". The checkpoint fixes the model: drop --init/--model/--vocab-size/"
                                    "--max-seq-len, or start a fresh run");
    run_id_ = ck_ ? ck_->meta().run_id : new_run_id();
    last_good_ = ck_ ? ck_->dir() : "";
    on_root_agreed(comm, [&] { claim_checkpoints(ckpt_root_, run_id_, o.overwrite); });
    loader_.tokens().check_vocab(cfg_.vocab_size);
    if (!o.val_data.empty()) {
        val_ = std::make_unique<DataLoader>(o.val_data, o.batch, o.seq_len, rank_, world_, false, 0);
        val_->tokens().check_vocab(cfg_.vocab_size);
    }
    const long long micro_tokens = static_cast<long long>(o.batch) * o.seq_len * world_;
    step_tokens_ = o.total_batch_tokens > 0 ? o.total_batch_tokens : micro_tokens;  // validate(): a multiple
    accum_ = static_cast<int>(step_tokens_ / micro_tokens);
    data_info_ = data_json(loader_.tokens());
    check_tokenizer();
    load_initial_state(params);
    last_step_ = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
    if (start_step_ >= last_step_) throw Error("--steps", "the checkpoint is already at step " + std::to_string(start_step_));
    profiler_.window(start_step_, last_step_);
    if (val_ && !o.tokenizer.empty()) val_bytes_ = std::make_unique<TokenBytes>(Tokenizer::load(o.tokenizer));
    else if (val_ && root_) log_info("no --tokenizer: validation reports loss per token only, not bits per byte");
    if (!o.eval_task.empty()) {
        if (o.tokenizer.empty()) throw Error("--eval-task", "needs --tokenizer to encode the items");
        task_items_ = read_hellaswag(o.eval_task);
        task_tok_ = std::make_unique<Tokenizer>(Tokenizer::load(o.tokenizer));
    }
    sched_ = o.schedule;
    sched_.total_steps = o.steps;
    fpt_ = flops_per_token(cfg_, o.seq_len, o.recompute);
    peak_ = peak_flops(be_, o.peak_tflops);
    log_ = std::make_unique<RunLog>(root_ ? o.log : "", ck_ != nullptr);
    tty_ = root_ && o.progress && isatty(fileno(stderr));
}

// Parameters, optimizer state, counters and the loader position: from the checkpoint (in the
// layout it was written with, resharded to this run's) or from the initial parameters.
void Run::load_initial_state(const std::vector<float>& params) {
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
    engine_.load_params(restore_params(*ck_, layout).data());
    opt_ = make_optimizer(ops_, layout, engine_.shard(), o_.optimizer, param_at_, comm_, o_.schedule.lr);
    restore_optimizer(*opt_, mem_, *ck_, layout);
    const CheckpointMeta& m = ck_->meta();
    start_step_ = m.step;
    applied_ = m.applied_steps;
    bad_steps_ = m.bad_steps;
    tokens_seen_ = m.tokens_seen;
    loader_.set_state(resume_position());
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
    differs("--train-data (hash)", m.data.value("hash", json()), data_info_.value("hash", json()));
    if (!m.tokenizer_hash.empty() && !tokenizer_hash_.empty()) differs("--tokenizer (hash)", m.tokenizer_hash, tokenizer_hash_);
    const bool position_lost = !changed.empty();
    differs("tokens per step", m.batch_tokens, step_tokens_);
    std::string list;
    for (const auto& c : changed) list += (list.empty() ? "" : ", ") + c;
    if (!changed.empty() && !o_.allow_resume_changes)
        throw Error("--resume", ck_->dir() + " was written with other data settings (" + list +
                                    "); resume with the checkpoint's values, or pass --allow-resume-changes to "
                                    "change them deliberately");
    if (root_)
        log_info("resuming from " + ck_->dir() + " at step " + std::to_string(m.step) + ": the checkpoint fixes the model (" +
                 cfg_.describe() + "), --dtype " + m.dtype + " and the optimizer state" +
                 (changed.empty() ? std::string() : "; changed on purpose: " + list) +
                 (position_lost ? "; the data position restarts at the beginning" : ""));
    return position_lost ? LoaderState{} : m.loader;
}

// The tokenizer checkpoints carry: --tokenizer, else (resuming) the checkpoint's own copy. Its
// bytes are kept, since the checkpoint it came from may be pruned before the next save.
void Run::check_tokenizer() {
    const std::string path = !o_.tokenizer.empty()                      ? o_.tokenizer
                             : ck_ && ck_->has_file("tokenizer.bin") ? ck_->path_of("tokenizer.bin")
                                                                      : "";
    if (path.empty()) return;
    tokenizer_bytes_ = read_whole_file(path);
    tokenizer_hash_ = Tokenizer::load(path).hash();
    const std::string& data_tokenizer = loader_.tokens().tokenizer_hash();
    if (!data_tokenizer.empty() && data_tokenizer != tokenizer_hash_)
        throw Error(o_.train_data, "was made with tokenizer " + data_tokenizer + ", but the tokenizer " + path +
                                       " is " + tokenizer_hash_ + ": a vocabulary mismatch");
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
}

// The global gradient norm: each rank sums the squares of the gradients it holds; stages 1-3
// hold disjoint shards, so those partial sums are added over the ranks.
double Run::global_grad_norm() {
    double sumsq = 0;
    for (const ShardSpan& s : engine_.shard()) sumsq += ops_.sum_squares(engine_.grad_at(s), s.count);
    if (engine_.norm_is_partial()) sumsq = comm_.all_reduce_sum_host(sumsq);
    return std::sqrt(sumsq);
}

void Run::skip(int done, double loss, double norm) {
    bad_steps_++;
    log_->event("skip", done, {{"loss", std::isfinite(loss) ? json(loss) : json(nullptr)},
                               {"grad_norm", std::isfinite(norm) ? json(norm) : json(nullptr)},
                               {"consecutive", bad_steps_}});
    if (root_)
        log_warn("step " + std::to_string(done) + ": non-finite loss or gradient; update skipped (" +
                 std::to_string(bad_steps_) + " in a row)");
    if (bad_steps_ < o_.max_bad_steps) return;
    const std::string& last = last_good_;
    log_->event("stop", done, {{"reason", "max_bad_steps"}, {"last_checkpoint", last}});
    throw Error("training", std::to_string(bad_steps_) + " consecutive steps with a non-finite loss or gradient (--max-bad-steps " +
                                std::to_string(o_.max_bad_steps) + "); stopped at step " + std::to_string(done) +
                                ". The last good checkpoint is " + (last.empty() ? std::string("(none written)") : last));
}

void Run::progress(int done, double loss, double norm, float lr, double secs, double mfu) {
    if (!root_ || !o_.progress) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
    const double eta = elapsed / (done - start_step_) * (last_step_ - done);
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

float Run::evaluate() {
    const int B = o_.batch, T = o_.seq_len;
    val_->set_state(LoaderState{});
    const long long avail = static_cast<long long>(val_->samples_per_epoch() / (static_cast<uint64_t>(B) * world_));
    const long long n = std::max(1LL, std::min<long long>(o_.eval_batches, avail));
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

// Collective: every rank writes its optimizer state; rank 0 the parameters, meta and DONE.
std::string Run::save(int step) {
    std::vector<char> params = engine_.gather_params();
    std::unique_ptr<CheckpointWriter> w;
    if (root_) w = std::make_unique<CheckpointWriter>(ckpt_root_, step, true);
    comm_.barrier();
    if (!root_) w = std::make_unique<CheckpointWriter>(ckpt_root_, step, false);
    std::vector<char> os = pack_optimizer(*opt_, mem_);
    w->add_file("optim-rank" + std::to_string(rank_) + ".bin", os.data(), os.size());
    comm_.barrier();
    std::string dir;
    if (root_) {
        w->add_file("params.bin", params.data(), params.size());
        if (!tokenizer_bytes_.empty()) w->add_file("tokenizer.bin", tokenizer_bytes_.data(), tokenizer_bytes_.size());
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
        prune_checkpoints(ckpt_root_, o_.keep_last, run_id_, step);
        log_->event("checkpoint", step, {{"dir", dir}});
    }
    comm_.barrier();
    last_good_ = root_ ? dir : latest_checkpoint(ckpt_root_);
    saved_step_ = step;
    return last_good_;
}

// A skipped step is a step too: the tokens were consumed, and its checkpoint (the weights
// unchanged) is due like any other.
void Run::end_step(int done, TrainResult& result) {
    if (o_.checkpoint_every > 0 && done % o_.checkpoint_every == 0 && done != last_step_) result.last_checkpoint = save(done);
    result.steps_done = done;
}

bool Run::params_finite() {
    double sumsq = 0;
    for (const ShardSpan& s : engine_.shard()) sumsq += ops_.sum_squares(engine_.param_at(s), s.count);
    if (engine_.norm_is_partial()) sumsq = comm_.all_reduce_sum_host(sumsq);
    return std::isfinite(sumsq);
}

bool Run::stop_requested() { return comm_.all_reduce_sum_host(StopSignals::received() ? 1.0 : 0.0) > 0; }

void Run::interrupted(int step) {
    const std::string dir = saved_step_ == step ? last_good_ : save(step);
    const int sig = StopSignals::received();
    log_->event("stop", step, {{"reason", "signal"}, {"signal", sig}, {"last_checkpoint", dir}});
    if (tty_) std::fprintf(stderr, "\n");
    throw Error("training", std::string("interrupted by ") + (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal") +
                                " after step " + std::to_string(step) + "; checkpoint " + dir +
                                " written. To continue, run the same command with --resume latest");
}

TrainResult Run::go() {
    write_header();
    const int B = o_.batch, T = o_.seq_len;
    TrainResult result;
    SpikeDetector spikes;
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    run_start_ = std::chrono::steady_clock::now();
    for (int step = start_step_; step < last_step_; step++) {
        if (step > start_step_ && stop_requested()) interrupted(step);
        const auto t0 = std::chrono::steady_clock::now();
        profiler_.begin_step(step);
        const size_t sent0 = comm_.bytes_sent_total();
        const std::vector<size_t> sent_by_collective = comm_counters();
        engine_.begin_step();
        model_.zero_grad();
        double local_loss = 0;
        for (int micro = 0; micro < accum_; micro++) {
            engine_.set_last_micro(micro == accum_ - 1);
            // A profiler region lasts to the end of its statement.
            profiler_.region(ProfileRegion::data), loader_.next(inputs.data(), targets.data());
            local_loss += model_.forward(inputs.data(), targets.data(), B, T, true, 1.0f / static_cast<float>(accum_ * world_));
            model_.backward();
        }
        if (o_.test_gradient_hook) o_.test_gradient_hook(step + 1, engine_.grad_at(engine_.shard()[0]), engine_.shard()[0].count);
        const double loss = comm_.all_reduce_sum_host(local_loss / accum_) / world_;
        const double norm = global_grad_norm();
        tokens_seen_ += static_cast<uint64_t>(step_tokens_);
        const int done = step + 1;
        if (!std::isfinite(loss) || !std::isfinite(norm)) {
            skip(done, loss, norm);
            end_step(done, result);
            continue;
        }
        bad_steps_ = 0;
        if (spikes.update(loss)) log_->event("spike", done, {{"loss", loss}, {"ema", spikes.mean()}, {"ema_std", spikes.stddev()}});
        const float scale = (o_.grad_clip > 0 && norm > o_.grad_clip) ? static_cast<float>(o_.grad_clip / norm) : 1.0f;
        const float lr = sched_.lr_at(step);
        profiler_.region(ProfileRegion::optimizer), opt_->step(param_at_, grad_at_, lr, scale, ++applied_);
        if (!params_finite()) {
            log_->event("stop", done, {{"reason", "non_finite_parameters"}, {"last_checkpoint", last_good_}});
            char lr_text[32];
            std::snprintf(lr_text, sizeof lr_text, "%g", lr);
            throw Error("training", "step " + std::to_string(done) + ": the update made parameters non-finite (learning rate " +
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
        result.last_loss = static_cast<float>(loss);
        json rec{{"type", "step"},           {"step", done},
                 {"loss", loss},             {"lr", lr},
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
        if (task_tok_ && o_.eval_every > 0 && (done % o_.eval_every == 0 || done == last_step_)) {
            const HellaSwagScore hs = score_hellaswag(model_, *task_tok_, task_items_);
            rec["task_acc"] = hs.acc();
            rec["task_acc_norm"] = hs.acc_norm();
            log_->event("eval_task", done, {{"task", "hellaswag"}, {"items", hs.items}, {"acc", hs.acc()}, {"acc_norm", hs.acc_norm()}});
        }
        if (val_ && o_.eval_every > 0 && (done % o_.eval_every == 0 || done == last_step_)) {
            result.last_val_loss = evaluate();
            rec["val_loss"] = result.last_val_loss;
            json ev{{"val_loss", result.last_val_loss}};
            if (evaluated_bpb_ >= 0) rec["val_bpb"] = ev["val_bpb"] = result.last_val_bpb = evaluated_bpb_;
            log_->event("eval", done, ev);
        }
        log_->write(rec);
        progress(done, loss, norm, lr, secs, mfu);
        end_step(done, result);
    }
    if (tty_) std::fprintf(stderr, "\n");
    if (result.steps_done > 0) result.last_checkpoint = save(result.steps_done);
    finish(last_step_ - start_step_);
    return result;
}

// The profile (--profile) and the bill: log events, OUT/profile.json, summary lines.
void Run::finish(int steps_run) {
    const double step_tokens = static_cast<double>(step_tokens_);
    if (profiler_.enabled() && root_) {
        const json rep = profiler_.report(machine_roof(be_, peak_), {fpt_.model * step_tokens, fpt_.hardware * step_tokens, world_, peak_.flops_per_s});
        if (!rep.is_null()) {
            write_file_atomically(o_.out_dir + "/profile.json", rep.dump(2) + "\n");
            log_->event("profile", last_step_, {{"path", o_.out_dir + "/profile.json"}, {"mfu", rep.at("mfu")}, {"hfu", rep.at("hfu")}});
            std::fprintf(stderr, "%s", StepProfiler::table(rep).c_str());
        }
    }
    Bill bill;
    bill.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
    bill.devices = world_;
    bill.model_flops = fpt_.model * step_tokens * steps_run;
    bill.hw_flops = fpt_.hardware * step_tokens * steps_run;
    bill.peak_flops = peak_.flops_per_s;
    bill.price_per_device_hour = o_.price_per_device_hour;
    log_->event("bill", last_step_, bill.to_json());
    if (root_) log_info(bill.summary());
}

}  // namespace

TrainResult train(const TrainOptions& o, const GPTConfig& config, const std::vector<float>& params, Comm* comm) {
    o.validate(comm ? comm->size() : 1);
    return Run(o, config, params, comm).go();
}

}  // namespace sixnd
