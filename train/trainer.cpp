#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/transfer.h"
#include "data/loader.h"
#include "dist/zero.h"
#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "train/peak_flops.h"
#include "train/run_log.h"
#include "train/spike_detector.h"

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
                {"grad_clip", grad_clip},
                {"out", out_dir},
                {"checkpoint_every", checkpoint_every},
                {"keep_last", keep_last},
                {"eval_every", eval_every},
                {"eval_batches", eval_batches},
                {"max_bad_steps", max_bad_steps},
                {"tokenizer", tokenizer}};
}

namespace {

json config_json(const GPTConfig& c) {
    return json{{"n_layer", c.n_layer},   {"n_head", c.n_head},
                {"n_embd", c.n_embd},     {"vocab_size", c.vocab_size},
                {"padded_vocab_size", c.padded_vocab_size}, {"max_seq_len", c.max_seq_len}};
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
    void load_initial_state(const std::vector<float>& params);
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

    const TrainOptions& o_;
    const std::string ckpt_root_;
    std::unique_ptr<CheckpointReader> ck_;
    GPTConfig cfg_;
    Backend be_;
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
    std::string tokenizer_hash_;
    Schedule sched_;
    FlopsPerToken fpt_;
    PeakFlops peak_;
    json data_info_;
    std::unique_ptr<RunLog> log_;
    bool tty_ = false;
    std::chrono::steady_clock::time_point run_start_;
    float evaluated_ = 0;  // the last validation loss
};

std::unique_ptr<CheckpointReader> Run::open_resume(const TrainOptions& o) {
    if (o.resume.empty()) return nullptr;
    const std::string root = o.out_dir + "/checkpoints";
    std::string dir = o.resume == "latest" ? latest_checkpoint(root) : o.resume;
    if (dir.empty()) {
        log_info("--resume latest: no checkpoint under " + root + "; starting fresh");
        return nullptr;
    }
    auto ck = std::make_unique<CheckpointReader>(dir);
    const std::string written = ck->meta().value("dtype", std::string("?"));
    if (written != dtype_name(o.dtype))
        throw Error(dir, "checkpoint was written with --dtype " + written + "; resume with the same dtype");
    return ck;
}

Run::Run(const TrainOptions& o, const GPTConfig& config, const std::vector<float>& params, Comm* comm)
    : o_(o),
      ckpt_root_(o.out_dir + "/checkpoints"),
      ck_(open_resume(o)),
      cfg_(ck_ ? checkpoint_model_config(*ck_) : config),
      be_(make_backend(o.device, o.dtype, comm ? comm->local_rank() : 0)),
      ops_(*be_.ops),
      mem_(*be_.memory),
      local_comm_(mem_),
      comm_(comm ? *comm : local_comm_),
      world_(comm_.size()),
      rank_(comm_.rank()),
      root_(rank_ == 0),
      mo_{o.attention, o.recompute, 64 * static_cast<size_t>(world_), o.zero_stage < 3, o.zero_stage < 2},
      model_(cfg_, ops_, mo_),
      engine_(o.zero_stage, comm_, mem_, o.dtype, model_.unit_spans(), model_, model_.params(), model_.grads(),
              [this](void* dst, const void* src, size_t n) { ops_.residual_forward(dst, dst, src, n); }),
      param_at_([this](const ShardSpan& s) { return engine_.param_at(s); }),
      grad_at_([this](const ShardSpan& s) { return engine_.grad_at(s); }),
      loader_(o.train_data, o.batch, o.seq_len, rank_, world_, o.shuffle, o.seed) {
    model_.set_hooks(&engine_);
    loader_.tokens().check_vocab(cfg_.vocab_size);
    if (!o.val_data.empty()) {
        val_ = std::make_unique<DataLoader>(o.val_data, o.batch, o.seq_len, rank_, world_, false, 0);
        val_->tokens().check_vocab(cfg_.vocab_size);
    }
    const long long micro_tokens = static_cast<long long>(o.batch) * o.seq_len * world_;
    step_tokens_ = o.total_batch_tokens > 0 ? o.total_batch_tokens : micro_tokens;
    if (step_tokens_ % micro_tokens != 0)
        throw Error("--total-batch-tokens", std::to_string(step_tokens_) +
                                                " is not a multiple of batch x seq-len x ranks = " + std::to_string(micro_tokens));
    accum_ = static_cast<int>(step_tokens_ / micro_tokens);
    load_initial_state(params);
    last_step_ = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
    if (start_step_ >= last_step_) throw Error("--steps", "the checkpoint is already at step " + std::to_string(start_step_));
    check_tokenizer();
    sched_ = o.schedule;
    sched_.total_steps = o.steps;
    fpt_ = flops_per_token(cfg_, o.seq_len, o.recompute);
    peak_ = peak_flops(be_, o.peak_tflops);
    data_info_ = data_json(loader_.tokens());
    log_ = std::make_unique<RunLog>(root_ ? o.log : "", ck_ != nullptr);
    tty_ = root_ && o.progress && isatty(fileno(stderr));
}

// Parameters, optimizer state, counters and the loader position: from the checkpoint (in the
// layout it was written with, resharded to this run's) or from the initial parameters.
void Run::load_initial_state(const std::vector<float>& params) {
    const ParamLayout& layout = model_.layout();
    const size_t es = dtype_size(o_.dtype);
    if (!ck_) {
        const ParamLayout given(cfg_);
        if (params.size() != given.total()) throw Error("initial parameters", "size does not match the model");
        std::vector<float> placed(layout.total(), 0.0f);
        relayout_range(given, layout, 0, params.size(), params.data(), placed.data(), 4);
        engine_.load_params(to_storage(placed.data(), placed.size(), o_.dtype).data());
        opt_ = std::make_unique<AdamW>(ops_, layout, engine_.shard(), o_.optimizer, param_at_);
        return;
    }
    try {
        const json& m = ck_->meta();
        const ParamLayout written(cfg_, m.at("unit_align").get<size_t>());
        engine_.load_params(restore_params(*ck_, written, layout, es).data());
        opt_ = std::make_unique<AdamW>(ops_, layout, engine_.shard(), o_.optimizer, param_at_);
        restore_optimizer(*opt_, mem_, *ck_, written, layout);
        start_step_ = m.at("step");
        applied_ = m.at("applied_steps");
        bad_steps_ = m.at("bad_steps");
        tokens_seen_ = m.at("tokens_seen");
        loader_.set_state(LoaderState{m.at("loader").at("epoch"), m.at("loader").at("cursor")});
    } catch (const nlohmann::json::exception& e) {
        throw Error(ck_->dir() + "/meta.json", e.what());
    }
}

void Run::check_tokenizer() {
    if (o_.tokenizer.empty()) return;
    tokenizer_hash_ = Tokenizer::load(o_.tokenizer).hash();
    const std::string& data_tokenizer = loader_.tokens().tokenizer_hash();
    if (!data_tokenizer.empty() && data_tokenizer != tokenizer_hash_)
        throw Error(o_.train_data, "was made with tokenizer " + data_tokenizer + ", but --tokenizer " + o_.tokenizer +
                                       " is " + tokenizer_hash_ + ": a vocabulary mismatch");
}

void Run::write_header() {
    log_->write({{"type", "header"},
                 {"config", o_.to_json()},
                 {"model", config_json(cfg_)},
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
                 {"grad_accum_steps", accum_},
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
    std::string last = latest_checkpoint(ckpt_root_);
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
    double sum = 0;
    for (long long k = 0; k < n; k++) {
        val_->next(in.data(), tg.data());
        sum += model_.forward(in.data(), tg.data(), B, T);
    }
    evaluated_ = static_cast<float>(comm_.all_reduce_sum_host(sum / n) / world_);
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
        if (!o_.tokenizer.empty()) w->copy_file("tokenizer.bin", o_.tokenizer);
        json meta{{"format", "sixnd-checkpoint"},
                  {"version", 1},
                  {"step", step},
                  {"applied_steps", applied_},
                  {"bad_steps", bad_steps_},
                  {"tokens_seen", tokens_seen_},
                  {"world_size", world_},
                  {"zero_stage", o_.zero_stage},
                  {"unit_align", mo_.unit_align},
                  {"dtype", dtype_name(o_.dtype)},
                  {"model", config_json(cfg_)},
                  {"config", o_.to_json()},
                  {"tokenizer_hash", tokenizer_hash_},
                  {"data", data_info_},
                  {"loader", {{"epoch", loader_.state().epoch}, {"cursor", loader_.state().cursor}}}};
        dir = w->commit(meta);
        prune_checkpoints(ckpt_root_, o_.keep_last);
        log_->event("checkpoint", step, {{"dir", dir}});
    }
    comm_.barrier();
    return root_ ? dir : latest_checkpoint(ckpt_root_);
}

TrainResult Run::go() {
    write_header();
    const int B = o_.batch, T = o_.seq_len;
    TrainResult result;
    SpikeDetector spikes;
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    run_start_ = std::chrono::steady_clock::now();
    for (int step = start_step_; step < last_step_; step++) {
        const auto t0 = std::chrono::steady_clock::now();
        const size_t sent0 = comm_.bytes_sent_total();
        const std::vector<size_t> sent_by_collective = comm_counters();
        engine_.begin_step();
        model_.zero_grad();
        double local_loss = 0;
        for (int micro = 0; micro < accum_; micro++) {
            engine_.set_last_micro(micro == accum_ - 1);
            loader_.next(inputs.data(), targets.data());
            local_loss += model_.forward(inputs.data(), targets.data(), B, T, true, 1.0f / static_cast<float>(accum_ * world_));
            model_.backward();
        }
        const double loss = comm_.all_reduce_sum_host(local_loss / accum_) / world_;
        const double norm = global_grad_norm();
        tokens_seen_ += static_cast<uint64_t>(step_tokens_);
        const int done = step + 1;
        if (!std::isfinite(loss) || !std::isfinite(norm)) {
            skip(done, loss, norm);
            continue;
        }
        bad_steps_ = 0;
        if (spikes.update(loss)) log_->event("spike", done, {{"loss", loss}, {"ema", spikes.mean()}, {"ema_std", spikes.stddev()}});
        const float scale = (o_.grad_clip > 0 && norm > o_.grad_clip) ? static_cast<float>(o_.grad_clip / norm) : 1.0f;
        const float lr = sched_.lr_at(step);
        opt_->step(param_at_, grad_at_, lr, scale, ++applied_);
        engine_.after_optimizer();
        mem_.sync();

        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
        if (val_ && o_.eval_every > 0 && (done % o_.eval_every == 0 || done == last_step_)) {
            result.last_val_loss = evaluate();
            rec["val_loss"] = result.last_val_loss;
            log_->event("eval", done, {{"val_loss", result.last_val_loss}});
        }
        log_->write(rec);
        progress(done, loss, norm, lr, secs, mfu);
        if (o_.checkpoint_every > 0 && done % o_.checkpoint_every == 0 && done != last_step_) result.last_checkpoint = save(done);
        result.steps_done = done;
    }
    if (tty_) std::fprintf(stderr, "\n");
    if (result.steps_done > 0) result.last_checkpoint = save(result.steps_done);
    return result;
}

}  // namespace

TrainResult train(const TrainOptions& o, const GPTConfig& config, const std::vector<float>& params, Comm* comm) {
    if (o.steps <= 0) throw Error("--steps", "must be positive");
    if (o.train_data.empty()) throw Error("--train-data", "is required");
    return Run(o, config, params, comm).go();
}

}  // namespace sixnd
