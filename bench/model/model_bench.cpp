// sixnd's side of the model benchmarks: tokens/s of forward+backward ("fwdbwd") or of a full
// training step with AdamW ("train"), for a named shape, on the device the backend picks.
// Prints one JSON line in the same form as bench/torch_gpt2.py, so bench scripts can put the
// two side by side. Also reports activation memory, for the recompute table.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <omp.h>

#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "model/init.h"
#include "core/rng.h"
#include "train/optimizer.h"
#include "train/peak_flops.h"

using namespace sixnd;

int main(int argc, char** argv) {
    CLI::App app{"sixnd model benchmark"};
    std::string shape = "small", dtype = "fp32", mode = "fwdbwd", attention = "flash", recompute = "none", device = "auto";
    int B = 8, T = 256, warmup = 2, iters = 5;
    app.add_option("--shape", shape,
                   "small (4x256, vocab 4096), demo (scripts/run.sh's d6: vocab 4096, 256 positions) or a preset name "
                   "(e.g. gpt2-124m)");
    app.add_option("--dtype", dtype);
    app.add_option("--mode", mode, "fwdbwd or train");
    app.add_option("--attention", attention);
    app.add_option("--recompute", recompute);
    app.add_option("--device", device);
    app.add_option("--batch", B);
    app.add_option("--seq-len", T);
    app.add_option("--warmup", warmup);
    app.add_option("--iters", iters);
    CLI11_PARSE(app, argc, argv);
    try {
        GPTConfig cfg;
        if (shape == "small") {
            cfg = preset_config("d6", 4096);
            cfg.n_layer = 4;
            cfg.n_head = 4;
            cfg.n_embd = 256;
        } else if (shape == "demo") {
            cfg = preset_config("d6", 4096, 256);
        } else {
            cfg = preset_config(shape);
        }
        Backend be = make_backend(device, parse_dtype(dtype));
        ModelOptions mo;
        mo.attention = parse_attention(attention);
        mo.recompute = parse_recompute(recompute);
        GPT model(cfg, *be.ops, mo);
        model.set_params(gpt2_init(model.layout(), cfg, 0));
        std::unique_ptr<AdamW> opt;
        void* params = model.params();
        void* grads = model.grads();
        auto at_params = [params](const ShardSpan&) { return params; };
        auto at_grads = [grads](const ShardSpan&) { return grads; };
        if (mode == "train")
            opt = std::make_unique<AdamW>(*be.ops, model.layout(), whole_buffer(model.layout().total()), OptimizerConfig{}, at_params);
        Rng rng(1);
        std::vector<int32_t> tok(size_t(B) * T + 1);
        for (auto& t : tok) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
        auto step = [&](int i) {
            model.zero_grad();
            model.forward(tok.data(), tok.data() + 1, B, T, true);
            model.backward();
            if (opt) {
                be.ops->sum_squares(model.grads(), model.layout().total());
                opt->step(at_params, at_grads, 1e-4f, 1.0f, i + 1);
            }
            be.memory->sync();
        };
        for (int i = 0; i < warmup; i++) step(i);
        be.memory->ledger().reset_peaks();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; i++) step(warmup + i);
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
        FlopsPerToken f = flops_per_token(cfg, T, mo.recompute);
        PeakFlops peak = peak_flops(be, 0);
        double tps = B * T / dt;
        const MemoryLedger& l = be.memory->ledger();
        nlohmann::json out{{"peer", "sixnd"}, {"device", be.device}, {"device_name", be.device_name}, {"shape", shape},
                           {"dtype", dtype}, {"mode", mode}, {"attention", attention}, {"recompute", recompute},
                           {"batch", B}, {"seq_len", T}, {"step_ms", dt * 1e3}, {"tokens_per_s", tps},
                           {"mfu", f.model * tps / peak.flops_per_s}, {"hfu", f.hardware * tps / peak.flops_per_s},
                           {"peak_tflops", peak.flops_per_s / 1e12}, {"peak_source", peak.source},
                           {"achievable_flops", peak.achievable}, {"peak_note", peak.note}, {"threads", omp_get_max_threads()}, {"cpu", cpu_host_json()},
                           {"activation_bytes", l.peak(MemCategory::activations)},
                           {"workspace_bytes", l.peak(MemCategory::workspace)},
                           {"peak_bytes", l.peak_total()}};
        std::printf("%s\n", out.dump().c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "model_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
