#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "core/transfer.h"
#include "data/loader.h"
#include "dist/zero.h"
#include "model/backend.h"
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
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(xxh64_bytes(ident.data(), ident.size())));
    return json{{"pattern", ts.pattern()}, {"tokens", ts.size()}, {"shards", shards}, {"hash", hash}};
}

}  // namespace

TrainResult train(const TrainOptions& o, const GPTConfig& config_in, const std::vector<float>& params_in, Comm* comm_in) {
    const std::string ckpt_root = o.out_dir + "/checkpoints";
    if (o.steps <= 0) throw Error("--steps", "must be positive");
    if (o.train_data.empty()) throw Error("--train-data", "is required");
    std::unique_ptr<CheckpointReader> ck;
    if (!o.resume.empty()) {
        std::string dir = o.resume == "latest" ? latest_checkpoint(ckpt_root) : o.resume;
        if (dir.empty()) log_info("--resume latest: no checkpoint under " + ckpt_root + "; starting fresh");
        else ck = std::make_unique<CheckpointReader>(dir);
    }
    GPTConfig cfg = config_in;
    size_t written_align = 64;
    if (ck) {
        cfg = checkpoint_model_config(*ck);
        const std::string where = ck->dir() + "/meta.json";
        try {
            if (ck->meta().at("dtype").get<std::string>() != dtype_name(o.dtype))
                throw Error(ck->dir(), "checkpoint was written with --dtype " + ck->meta().at("dtype").get<std::string>() +
                                           "; resume with the same dtype");
            written_align = ck->meta().at("unit_align").get<size_t>();
        } catch (const nlohmann::json::exception& e) {
            throw Error(where, e.what());
        }
    }

    Backend be = make_backend(o.device, o.dtype, comm_in ? comm_in->local_rank() : 0);
    Ops& ops = *be.ops;
    MemoryBackend& mem = *be.memory;
    LocalComm local_comm(mem);
    Comm& comm = comm_in ? *comm_in : local_comm;
    const int world = comm.size(), rank = comm.rank();
    const bool root = rank == 0;

    ModelOptions mo;
    mo.attention = o.attention;
    mo.recompute = o.recompute;
    mo.unit_align = 64 * static_cast<size_t>(world);
    mo.allocate_params = o.zero_stage < 3;
    mo.allocate_grads = o.zero_stage < 2;
    GPT model(cfg, ops, mo);
    const ParamLayout& layout = model.layout();
    const size_t es = dtype_size(o.dtype);
    ZeroEngine engine(o.zero_stage, comm, mem, o.dtype, model.unit_spans(), model, model.params(), model.grads(),
                      [&ops](void* dst, const void* src, size_t n) { ops.residual_forward(dst, dst, src, n); });
    model.set_hooks(&engine);
    auto param_at = [&engine](const ShardSpan& s) { return engine.param_at(s); };
    auto grad_at = [&engine](const ShardSpan& s) { return engine.grad_at(s); };

    int start_step = 0, applied = 0, bad_steps = 0;
    uint64_t tokens_seen = 0;
    const ParamLayout written(cfg, written_align);
    if (ck) {
        engine.load_params(restore_params(*ck, written, layout, es).data());
        try {
            start_step = ck->meta().at("step");
            applied = ck->meta().at("applied_steps");
            bad_steps = ck->meta().at("bad_steps");
            tokens_seen = ck->meta().at("tokens_seen");
        } catch (const nlohmann::json::exception& e) {
            throw Error(ck->dir() + "/meta.json", e.what());
        }
    } else {
        if (params_in.size() != ParamLayout(cfg).total()) throw Error("initial parameters", "size does not match the model");
        std::vector<float> placed(layout.total(), 0.0f);
        relayout_range(ParamLayout(cfg), layout, 0, params_in.size(), params_in.data(), placed.data(), 4);
        engine.load_params(to_storage(placed.data(), placed.size(), o.dtype).data());
    }
    AdamW opt(ops, layout, engine.shard(), o.optimizer, param_at);

    const int B = o.batch, T = o.seq_len;
    DataLoader loader(o.train_data, B, T, rank, world, o.shuffle, o.seed);
    loader.tokens().check_vocab(cfg.vocab_size);
    std::unique_ptr<DataLoader> val;
    if (!o.val_data.empty()) {
        val = std::make_unique<DataLoader>(o.val_data, B, T, rank, world, false, 0);
        val->tokens().check_vocab(cfg.vocab_size);
    }
    const long long micro_tokens = static_cast<long long>(B) * T * world;
    const long long step_tokens = o.total_batch_tokens > 0 ? o.total_batch_tokens : micro_tokens;
    if (step_tokens % micro_tokens != 0)
        throw Error("--total-batch-tokens", std::to_string(step_tokens) + " is not a multiple of batch x seq-len x ranks = " +
                                                std::to_string(micro_tokens));
    const int accum = static_cast<int>(step_tokens / micro_tokens);
    if (ck) {
        restore_optimizer(opt, mem, *ck, written, layout);
        try {
            const json& ls = ck->meta().at("loader");
            loader.set_state(LoaderState{ls.at("epoch"), ls.at("cursor")});
        } catch (const nlohmann::json::exception& e) {
            throw Error(ck->dir() + "/meta.json", e.what());
        }
    }
    const int last_step = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
    if (start_step >= last_step) throw Error("--steps", "the checkpoint is already at step " + std::to_string(start_step));

    std::string tokenizer_hash;
    if (!o.tokenizer.empty()) tokenizer_hash = Tokenizer::load(o.tokenizer).hash();
    const std::string& data_tokenizer = loader.tokens().tokenizer_hash();
    if (!tokenizer_hash.empty() && !data_tokenizer.empty() && data_tokenizer != tokenizer_hash)
        throw Error(o.train_data, "was made with tokenizer " + data_tokenizer + ", but --tokenizer " + o.tokenizer +
                                      " is " + tokenizer_hash + ": a vocabulary mismatch");
    Schedule sched = o.schedule;
    sched.total_steps = o.steps;
    const FlopsPerToken fpt = flops_per_token(cfg, T, o.recompute);
    const PeakFlops peak = peak_flops(be, o.peak_tflops);
    const json data_info = data_json(loader.tokens());

    RunLog log(root ? o.log : "", ck != nullptr);
    log.write({{"type", "header"},
               {"config", o.to_json()},
               {"model", config_json(cfg)},
               {"params", layout.num_params()},
               {"device", be.device},
               {"device_name", be.device_name},
               {"world_size", world},
               {"comm", comm.name()},
               {"zero_stage", o.zero_stage},
               {"peak_flops", peak.flops_per_s},
               {"peak_source", peak.source},
               {"flops_per_token", fpt.model},
               {"hw_flops_per_token", fpt.hardware},
               {"grad_accum_steps", accum},
               {"batch_tokens", step_tokens},
               {"resumed_from", ck ? ck->dir() : ""},
               {"data", data_info},
               {"build", {{"compiler", __VERSION__}, {"date", __DATE__}}}});
    if (root)
        log_info("training " + cfg.describe() + " (" + std::to_string(layout.num_params()) + " parameters) on " +
                 std::to_string(world) + " x " + be.device + " [" + be.device_name + "], " + dtype_name(o.dtype) +
                 ", ZeRO-" + std::to_string(o.zero_stage) + ", " + std::to_string(step_tokens) + " tokens/step (" +
                 std::to_string(accum) + " micro-steps of " + std::to_string(world) + "x" + std::to_string(B) + "x" +
                 std::to_string(T) + ")");

    // Collective: every rank writes its optimizer state; rank 0 the parameters, meta and DONE.
    auto save = [&](int step) {
        std::vector<char> params = engine.gather_params();
        std::unique_ptr<CheckpointWriter> w;
        if (root) w = std::make_unique<CheckpointWriter>(ckpt_root, step, true);
        comm.barrier();
        if (!root) w = std::make_unique<CheckpointWriter>(ckpt_root, step, false);
        std::vector<char> os = pack_optimizer(opt, mem);
        w->add_file("optim-rank" + std::to_string(rank) + ".bin", os.data(), os.size());
        comm.barrier();
        std::string dir;
        if (root) {
            w->add_file("params.bin", params.data(), params.size());
            if (!o.tokenizer.empty()) w->copy_file("tokenizer.bin", o.tokenizer);
            json meta{{"format", "sixnd-checkpoint"},
                      {"version", 1},
                      {"step", step},
                      {"applied_steps", applied},
                      {"bad_steps", bad_steps},
                      {"tokens_seen", tokens_seen},
                      {"world_size", world},
                      {"zero_stage", o.zero_stage},
                      {"unit_align", mo.unit_align},
                      {"dtype", dtype_name(o.dtype)},
                      {"model", config_json(cfg)},
                      {"config", o.to_json()},
                      {"tokenizer_hash", tokenizer_hash},
                      {"data", data_info},
                      {"loader", {{"epoch", loader.state().epoch}, {"cursor", loader.state().cursor}}}};
            dir = w->commit(meta);
            prune_checkpoints(ckpt_root, o.keep_last);
            log.event("checkpoint", step, {{"dir", dir}});
        }
        comm.barrier();
        return root ? dir : latest_checkpoint(ckpt_root);
    };
    auto evaluate = [&]() {
        val->set_state(LoaderState{});
        const long long avail = static_cast<long long>(val->samples_per_epoch() / (static_cast<uint64_t>(B) * world));
        const long long n = std::max(1LL, std::min<long long>(o.eval_batches, avail));
        std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
        double sum = 0;
        for (long long k = 0; k < n; k++) {
            val->next(in.data(), tg.data());
            sum += model.forward(in.data(), tg.data(), B, T);
        }
        return static_cast<float>(comm.all_reduce_sum_host(sum / n) / world);
    };
    auto gathered_memory = [&]() {
        const MemoryLedger& l = mem.ledger();
        std::vector<double> mine;
        for (int i = 0; i < kMemCategories; i++) mine.push_back(static_cast<double>(l.current(static_cast<MemCategory>(i))));
        mine.push_back(static_cast<double>(l.peak_total()));
        std::vector<double> all = comm.all_gather_host(mine);
        json ranks = json::array();
        for (int r = 0; r < world; r++) {
            json m;
            for (int i = 0; i < kMemCategories; i++) m[mem_category_name(static_cast<MemCategory>(i))] = all[r * mine.size() + i];
            m["peak"] = all[r * mine.size() + kMemCategories];
            ranks.push_back(m);
        }
        return ranks;
    };

    TrainResult result;
    SpikeDetector spikes;
    const bool tty = root && o.progress && isatty(fileno(stderr));
    const int report_every = std::max(1, (last_step - start_step) / 20);
    std::vector<int32_t> inputs(size_t(B) * T), targets(size_t(B) * T);
    auto run_start = std::chrono::steady_clock::now();
    for (int step = start_step; step < last_step; step++) {
        auto t0 = std::chrono::steady_clock::now();
        const size_t sent0 = comm.bytes_sent_total();
        engine.begin_step();
        model.zero_grad();
        double local_loss = 0;
        for (int micro = 0; micro < accum; micro++) {
            engine.set_last_micro(micro == accum - 1);
            loader.next(inputs.data(), targets.data());
            local_loss += model.forward(inputs.data(), targets.data(), B, T, true, 1.0f / static_cast<float>(accum * world));
            model.backward();
        }
        const double loss = comm.all_reduce_sum_host(local_loss / accum) / world;
        double sumsq = 0;
        for (const ShardSpan& s : engine.shard()) sumsq += ops.sum_squares(engine.grad_at(s), s.count);
        if (engine.norm_is_partial()) sumsq = comm.all_reduce_sum_host(sumsq);
        const double norm = std::sqrt(sumsq);
        tokens_seen += static_cast<uint64_t>(step_tokens);
        const int done = step + 1;
        if (!std::isfinite(loss) || !std::isfinite(norm)) {
            bad_steps++;
            log.event("skip", done, {{"loss", std::isfinite(loss) ? json(loss) : json(nullptr)},
                                     {"grad_norm", std::isfinite(norm) ? json(norm) : json(nullptr)},
                                     {"consecutive", bad_steps}});
            if (root)
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
        opt.step(param_at, grad_at, lr, scale, ++applied);
        engine.after_optimizer();
        mem.sync();
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double flops = fpt.model * static_cast<double>(step_tokens);
        // MFU is per device: each of the `world` devices did 1/world of the work.
        const double mfu = peak.flops_per_s > 0 ? flops / world / secs / peak.flops_per_s : 0;
        const double hfu = peak.flops_per_s > 0 ? fpt.hardware * static_cast<double>(step_tokens) / world / secs / peak.flops_per_s : 0;
        result.losses.push_back(static_cast<float>(loss));
        result.last_loss = static_cast<float>(loss);
        json rec{{"type", "step"},           {"step", done},
                 {"loss", loss},             {"lr", lr},
                 {"grad_norm", norm},        {"clip_scale", scale},
                 {"tokens", tokens_seen},    {"step_ms", secs * 1e3},
                 {"tokens_per_s", step_tokens / secs}, {"flops", flops},
                 {"mfu", mfu},               {"hfu", hfu},
                 {"comm_bytes", comm.bytes_sent_total() - sent0},
                 {"memory", memory_json(mem.ledger())}};
        if (be.device == "cuda") rec["memory"]["device_in_use"] = device_bytes_in_use(be);
        if (world > 1) rec["memory_ranks"] = gathered_memory();
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
        else if (root && o.progress && (done % report_every == 0 || done == last_step)) std::fprintf(stderr, "%s\n", line);

        if (o.checkpoint_every > 0 && done % o.checkpoint_every == 0 && done != last_step) result.last_checkpoint = save(done);
        result.steps_done = done;
    }
    if (tty) std::fprintf(stderr, "\n");
    if (result.steps_done > 0) result.last_checkpoint = save(result.steps_done);
    return result;
}

}  // namespace sixnd
