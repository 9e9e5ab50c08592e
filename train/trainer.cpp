#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "data/loader.h"
#include "model/backend.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
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

// The optimizer-state file of one rank: a small header, then master (if kept), m and v.
struct OptimHeader {
    char magic[8];
    uint64_t begin, end, has_master;
};

std::vector<char> pack_optimizer(AdamW& opt, MemoryBackend& mem) {
    const size_t n = opt.end() - opt.begin();
    OptimHeader h{};
    std::memcpy(h.magic, "SIXNDOPT", 8);
    h.begin = opt.begin();
    h.end = opt.end();
    h.has_master = opt.has_master();
    std::vector<char> buf(sizeof h + n * 4 * (opt.has_master() ? 3 : 2));
    std::memcpy(buf.data(), &h, sizeof h);
    char* p = buf.data() + sizeof h;
    for (DeviceBuffer* b : {&opt.master(), &opt.m(), &opt.v()}) {
        if (!*b) continue;
        mem.copy_to_host(p, b->get(), n * 4);
        p += n * 4;
    }
    return buf;
}

void unpack_optimizer(AdamW& opt, MemoryBackend& mem, const std::vector<char>& buf, const std::string& where) {
    const size_t n = opt.end() - opt.begin();
    OptimHeader h{};
    if (buf.size() < sizeof h) throw Error(where, "optimizer state is shorter than its header");
    std::memcpy(&h, buf.data(), sizeof h);
    if (std::memcmp(h.magic, "SIXNDOPT", 8) != 0) throw Error(where, "not a sixnd optimizer-state file");
    if (h.begin != opt.begin() || h.end != opt.end() || static_cast<bool>(h.has_master) != opt.has_master())
        throw Error(where, "optimizer state does not match this run (range or master weights differ)");
    if (buf.size() != sizeof h + n * 4 * (opt.has_master() ? 3 : 2)) throw Error(where, "optimizer state has the wrong size");
    const char* p = buf.data() + sizeof h;
    for (DeviceBuffer* b : {&opt.master(), &opt.m(), &opt.v()}) {
        if (!*b) continue;
        mem.copy_to_device(b->get(), p, n * 4);
        p += n * 4;
    }
}

json data_json(const TokenSet& ts) {
    json shards = json::array();
    std::string ident;
    for (const auto& s : ts.shards()) {
        shards.push_back({{"path", s.path()}, {"tokens", s.size()}});
        ident += s.path() + ":" + std::to_string(s.size()) + ";";
    }
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(xxh64_bytes(ident.data(), ident.size())));
    return json{{"pattern", ts.pattern()}, {"tokens", ts.size()}, {"shards", shards}, {"hash", hash}};
}

}  // namespace

TrainResult train(const TrainOptions& o, const GPTConfig& config_in, const std::vector<float>& params_in) {
    const std::string ckpt_root = o.out_dir + "/checkpoints";
    std::unique_ptr<CheckpointReader> ck;
    if (!o.resume.empty()) {
        std::string dir = o.resume == "latest" ? latest_checkpoint(ckpt_root) : o.resume;
        if (dir.empty()) log_info("--resume latest: no checkpoint under " + ckpt_root + "; starting fresh");
        else ck = std::make_unique<CheckpointReader>(dir);
    }
    GPTConfig cfg = config_in;
    if (ck) {
        cfg = checkpoint_model_config(*ck);
        if (ck->meta().value("dtype", "") != dtype_name(o.dtype))
            throw Error(ck->dir(), "checkpoint was written with --dtype " + ck->meta().value("dtype", std::string("?")) +
                                       "; resume with the same dtype");
    }
    if (o.steps <= 0) throw Error("--steps", "must be positive");
    if (o.train_data.empty()) throw Error("--train-data", "is required");

    Backend be = make_backend(o.device, o.dtype);
    Ops& ops = *be.ops;
    MemoryBackend& mem = *be.memory;
    ModelOptions mo;
    mo.attention = o.attention;
    mo.recompute = o.recompute;
    GPT model(cfg, ops, mo);
    const ParamLayout& layout = model.layout();
    const size_t param_bytes = layout.total() * dtype_size(o.dtype);

    int start_step = 0, applied = 0, bad_steps = 0;
    uint64_t tokens_seen = 0;
    if (ck) {
        std::vector<char> p = ck->read_file("params.bin");
        if (p.size() != param_bytes) throw Error(ck->path_of("params.bin"), "size does not match the model in meta.json");
        mem.copy_to_device(model.params(), p.data(), p.size());
        start_step = ck->meta().at("step");
        applied = ck->meta().at("applied_steps");
        bad_steps = ck->meta().at("bad_steps");
        tokens_seen = ck->meta().at("tokens_seen");
    } else {
        model.set_params(params_in);
    }
    AdamW opt(ops, layout, 0, layout.total(), o.optimizer, model.params());

    const int world = 1, rank = 0;
    const int B = o.batch, T = o.seq_len;
    DataLoader loader(o.train_data, B, T, rank, world, o.shuffle, o.seed);
    loader.tokens().check_vocab(cfg.vocab_size);
    std::unique_ptr<DataLoader> val;
    if (!o.val_data.empty()) {
        val = std::make_unique<DataLoader>(o.val_data, B, T, 0, 1, false, 0);
        val->tokens().check_vocab(cfg.vocab_size);
    }
    const long long micro_tokens = static_cast<long long>(B) * T * world;
    const long long step_tokens = o.total_batch_tokens > 0 ? o.total_batch_tokens : micro_tokens;
    if (step_tokens % micro_tokens != 0)
        throw Error("--total-batch-tokens", std::to_string(step_tokens) + " is not a multiple of batch x seq-len x ranks = " +
                                                std::to_string(micro_tokens));
    const int accum = static_cast<int>(step_tokens / micro_tokens);
    if (ck) {
        unpack_optimizer(opt, mem, ck->read_file("optim-rank0.bin"), ck->path_of("optim-rank0.bin"));
        const json& ls = ck->meta().at("ranks").at(0).at("loader");
        loader.set_state(LoaderState{ls.at("epoch"), ls.at("cursor")});
    }
    const int last_step = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
    if (start_step >= last_step) throw Error("--steps", "the checkpoint is already at step " + std::to_string(start_step));

    std::string tokenizer_hash;
    if (!o.tokenizer.empty()) tokenizer_hash = Tokenizer::load(o.tokenizer).hash();
    Schedule sched = o.schedule;
    sched.total_steps = o.steps;
    const FlopsPerToken fpt = flops_per_token(cfg, T, o.recompute);
    const PeakFlops peak = peak_flops(be, o.peak_tflops);
    const json data_info = data_json(loader.tokens());

    RunLog log(o.log, ck != nullptr);
    log.write({{"type", "header"},
               {"config", o.to_json()},
               {"model", config_json(cfg)},
               {"params", layout.num_params()},
               {"device", be.device},
               {"device_name", be.device_name},
               {"peak_flops", peak.flops_per_s},
               {"peak_source", peak.source},
               {"flops_per_token", fpt.model},
               {"hw_flops_per_token", fpt.hardware},
               {"grad_accum_steps", accum},
               {"batch_tokens", step_tokens},
               {"resumed_from", ck ? ck->dir() : ""},
               {"data", data_info},
               {"build", {{"compiler", __VERSION__}, {"date", __DATE__}}}});
    log_info("training " + cfg.describe() + " (" + std::to_string(layout.num_params()) + " parameters) on " +
             be.device + " [" + be.device_name + "], " + dtype_name(o.dtype) + ", " + std::to_string(step_tokens) +
             " tokens/step (" + std::to_string(accum) + " micro-steps of " + std::to_string(B) + "x" + std::to_string(T) + ")");

    auto save = [&](int step) {
        CheckpointWriter w(ckpt_root, step);
        std::vector<char> p(param_bytes);
        mem.copy_to_host(p.data(), model.params(), param_bytes);
        w.add_file("params.bin", p.data(), p.size());
        std::vector<char> os = pack_optimizer(opt, mem);
        w.add_file("optim-rank0.bin", os.data(), os.size());
        if (!o.tokenizer.empty()) w.copy_file("tokenizer.bin", o.tokenizer);
        json meta{{"format", "sixnd-checkpoint"},
                  {"version", 1},
                  {"step", step},
                  {"applied_steps", applied},
                  {"bad_steps", bad_steps},
                  {"tokens_seen", tokens_seen},
                  {"world_size", world},
                  {"zero_stage", 0},
                  {"dtype", dtype_name(o.dtype)},
                  {"model", config_json(cfg)},
                  {"config", o.to_json()},
                  {"tokenizer_hash", tokenizer_hash},
                  {"data", data_info},
                  {"ranks", json::array({{{"rank", 0}, {"loader", {{"epoch", loader.state().epoch}, {"cursor", loader.state().cursor}}}}})}};
        std::string dir = w.commit(meta);
        prune_checkpoints(ckpt_root, o.keep_last);
        log.event("checkpoint", step, {{"dir", dir}});
        return dir;
    };
    auto evaluate = [&]() {
        val->set_state(LoaderState{});
        const long long avail = static_cast<long long>(val->samples_per_epoch() / B);
        const long long n = std::max(1LL, std::min<long long>(o.eval_batches, avail));
        std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
        double sum = 0;
        for (long long k = 0; k < n; k++) {
            val->next(in.data(), tg.data());
            sum += model.forward(in.data(), tg.data(), B, T);
        }
        return static_cast<float>(sum / n);
    };

    TrainResult result;
    SpikeDetector spikes;
    const bool tty = o.progress && isatty(fileno(stderr));
    const int report_every = std::max(1, (last_step - start_step) / 20);
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    auto run_start = std::chrono::steady_clock::now();
    for (int step = start_step; step < last_step; step++) {
        auto t0 = std::chrono::steady_clock::now();
        model.zero_grad();
        double loss = 0;
        for (int micro = 0; micro < accum; micro++) {
            loader.next(inputs.data(), targets.data());
            loss += model.forward(inputs.data(), targets.data(), B, T, true, 1.0f / accum);
            model.backward();
        }
        loss /= accum;
        const double norm = std::sqrt(ops.sum_squares(model.grads(), layout.total()));
        tokens_seen += static_cast<uint64_t>(step_tokens);
        const int done = step + 1;
        if (!std::isfinite(loss) || !std::isfinite(norm)) {
            bad_steps++;
            log.event("skip", done, {{"loss", std::isfinite(loss) ? json(loss) : json(nullptr)},
                                     {"grad_norm", std::isfinite(norm) ? json(norm) : json(nullptr)},
                                     {"consecutive", bad_steps}});
            log_warn("step " + std::to_string(done) + ": non-finite loss or gradient; update skipped (" +
                     std::to_string(bad_steps) + " in a row)");
            if (bad_steps >= o.max_bad_steps) {
                std::string last = latest_checkpoint(ckpt_root);
                log.event("stop", done, {{"reason", "max_bad_steps"}, {"last_checkpoint", last}});
                throw Error("training", std::to_string(bad_steps) + " consecutive steps with a non-finite loss or gradient (--max-bad-steps " +
                                            std::to_string(o.max_bad_steps) + "); stopped at step " + std::to_string(done) +
                                            ". The last good checkpoint is " + (last.empty() ? std::string("(none written)") : last));
            }
            continue;
        }
        bad_steps = 0;
        if (spikes.update(loss))
            log.event("spike", done, {{"loss", loss}, {"ema", spikes.mean()}, {"ema_std", spikes.stddev()}});
        const float scale = (o.grad_clip > 0 && norm > o.grad_clip) ? static_cast<float>(o.grad_clip / norm) : 1.0f;
        const float lr = sched.lr_at(step);
        opt.step(model.params(), model.grads(), lr, scale, ++applied);
        mem.sync();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double flops = fpt.model * static_cast<double>(step_tokens);
        const double mfu = peak.flops_per_s > 0 ? flops / secs / peak.flops_per_s : 0;
        const double hfu = peak.flops_per_s > 0 ? fpt.hardware * static_cast<double>(step_tokens) / secs / peak.flops_per_s : 0;
        result.losses.push_back(static_cast<float>(loss));
        result.last_loss = static_cast<float>(loss);
        json rec{{"type", "step"},           {"step", done},
                 {"loss", loss},             {"lr", lr},
                 {"grad_norm", norm},        {"clip_scale", scale},
                 {"tokens", tokens_seen},    {"step_ms", secs * 1e3},
                 {"tokens_per_s", step_tokens / secs}, {"flops", flops},
                 {"mfu", mfu},               {"hfu", hfu},
                 {"memory", memory_json(mem.ledger())}};
        if (val && o.eval_every > 0 && (done % o.eval_every == 0 || done == last_step)) {
            result.last_val_loss = evaluate();
            rec["val_loss"] = result.last_val_loss;
            log.event("eval", done, {{"val_loss", result.last_val_loss}});
        }
        log.write(rec);

        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
        const double eta = elapsed / (done - start_step) * (last_step - done);
        char line[256];
        std::snprintf(line, sizeof line, "step %d/%d | loss %.4f%s | lr %.2e | norm %.3f | %.0f tok/s | MFU %.1f%% | ETA %s",
                      done, o.steps, loss,
                      rec.contains("val_loss") ? (" val " + std::to_string(result.last_val_loss).substr(0, 6)).c_str() : "",
                      lr, norm, step_tokens / secs, mfu * 100, format_duration(eta).c_str());
        if (tty) std::fprintf(stderr, "\r%-120s", line);
        else if (o.progress && (done % report_every == 0 || done == last_step)) std::fprintf(stderr, "%s\n", line);

        if (o.checkpoint_every > 0 && done % o.checkpoint_every == 0 && done != last_step) result.last_checkpoint = save(done);
        result.steps_done = done;
    }
    if (tty) std::fprintf(stderr, "\n");
    if (result.steps_done > 0) result.last_checkpoint = save(result.steps_done);
    return result;
}

}  // namespace sixnd
