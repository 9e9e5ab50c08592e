// sixnd's side of the model benchmarks: tokens/s of forward+backward ("fwdbwd") or of a full
// training step with AdamW ("train"), for a named shape, on the device the backend picks.
// Prints one JSON line per dtype in the same form as bench/torch_gpt2.py, so bench scripts can put
// the two side by side. Also reports activation memory, for the recompute table. With two dtypes
// their models live side by side and step in turn, which measures their ratio on a shared machine
// far more tightly than two processes a minute apart. Stepping in turn, each model finds the
// caches full of the other's data: --turn N gives each model N consecutive steps per turn and
// times only the last N - 1, so that a dtype with the larger working set is not charged for
// refilling them. --profile adds, per dtype, the milliseconds
// per timed step of each op and shape (ProfilingOps: the host clock around every op), so that
// two dtypes' ops are compared in the same alternated steps.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <omp.h>

#include "core/error.h"
#include "model/backend.h"
#include "model/cpu/cpu_ops.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "model/init.h"
#include "model/profiling_ops.h"
#include "core/rng.h"
#include "train/optimizer.h"
#include "train/peak_flops.h"

using namespace sixnd;

namespace {

// One model of one dtype with its optimizer, stepped on the same tokens each time.
struct Run {
    std::string dtype;
    Backend be;
    std::unique_ptr<GPT> model;
    std::unique_ptr<AdamW> opt;
    std::vector<double> step_s;  // the timed steps
    ProfilingOps* prof = nullptr;  // be.ops, with --profile

    Run(const std::string& dt, const std::string& device, const GPTConfig& cfg, const ModelOptions& mo, bool train,
        bool profile)
        : dtype(dt), be(make_backend(device, parse_dtype(dt))) {
        if (profile) {
            auto p = std::make_unique<ProfilingOps>(std::move(be.ops));
            prof = p.get();
            be.ops = std::move(p);
        }
        model = std::make_unique<GPT>(cfg, *be.ops, mo);
        model->set_params(gpt2_init(model->layout(), cfg, 0));
        if (train)
            opt = std::make_unique<AdamW>(*be.ops, model->layout(), whole_buffer(model->layout().total()),
                                          OptimizerConfig{}, [this](const ShardSpan&) { return model->params(); });
    }

    double step(const std::vector<int32_t>& tok, int B, int T, int i) {
        const auto t0 = std::chrono::steady_clock::now();
        model->zero_grad();
        model->forward(tok.data(), tok.data() + 1, B, T, true);
        model->backward();
        if (opt) {
            be.ops->sum_squares(model->grads(), model->layout().total());
            opt->step([this](const ShardSpan&) { return model->params(); },
                      [this](const ShardSpan&) { return model->grads(); }, 1e-4f, 1.0f, i + 1);
        }
        be.memory->sync();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sixnd model benchmark"};
    std::string shape = "small", mode = "fwdbwd", attention = "flash", recompute = "none", device = "auto";
    std::vector<std::string> dtypes{"fp32"};
    int B = 8, T = 256, warmup = 2, iters = 5, turn = 1;
    bool profile = false;
    app.add_option("--shape", shape,
                   "small (4x256, vocab 4096), demo (scripts/run.sh's d6: vocab 4096, 256 positions) or a preset name "
                   "(e.g. gpt2-124m)");
    app.add_option("--dtype", dtypes,
                   "fp32, bf16, or both (fp32,bf16): one model per dtype in this process, their steps alternating "
                   "(the first dtype alternating too), so that their ratio compares steps a second apart")
        ->delimiter(',');
    app.add_option("--mode", mode, "fwdbwd or train")->check(CLI::IsMember({"fwdbwd", "train"}));
    app.add_option("--attention", attention);
    app.add_option("--recompute", recompute);
    app.add_option("--device", device);
    app.add_option("--batch", B)->check(CLI::Range(1, 1 << 16));
    app.add_option("--seq-len", T)->check(CLI::Range(1, 1 << 20));
    app.add_option("--warmup", warmup)->check(CLI::Range(0, 1 << 20));
    app.add_option("--iters", iters, "timed steps per model")->check(CLI::Range(1, 1 << 20));
    app.add_option("--turn", turn,
                   "with two dtypes: steps per model per turn; above 1 the first of each turn is not timed")
        ->check(CLI::Range(1, 1000));
    app.add_flag("--profile", profile, "also print each op's milliseconds per timed step (by op and shape), per dtype");
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
            // preset_config names train's flag for the preset; here it is --shape.
            try {
                cfg = preset_config(shape);
            } catch (const Error& e) {
                throw Error("--shape", e.fault() + " (or small, demo)");
            }
        }
        // Two models of one dtype would print two results of that dtype, which a script keyed by
        // dtype (cpu_model_bench.py) takes one of.
        for (size_t i = 0; i < dtypes.size(); i++)
            for (size_t j = 0; j < i; j++)
                if (dtypes[i] == dtypes[j]) throw Error("--dtype", "names " + dtypes[i] + " twice");
        ModelOptions mo;
        mo.attention = parse_attention(attention);
        mo.recompute = parse_recompute(recompute);
        std::vector<std::unique_ptr<Run>> runs;
        for (const std::string& dt : dtypes) runs.push_back(std::make_unique<Run>(dt, device, cfg, mo, mode == "train", profile));
        Rng rng(1);
        std::vector<int32_t> tok(size_t(B) * T + 1);
        for (auto& t : tok) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
        for (auto& r : runs) {
            for (int i = 0; i < warmup; i++) r->step(tok, B, T, i);
            r->be.memory->ledger().reset_peaks();
            if (r->prof) r->prof->set_enabled(true);
        }
        const int timed_per_turn = runs.size() > 1 && turn > 1 ? turn - 1 : turn;
        for (int t = 0, step = warmup; runs[0]->step_s.size() < static_cast<size_t>(iters); t++, step += turn)
            for (size_t k = 0; k < runs.size(); k++) {
                Run& r = *runs[(k + t) % runs.size()];
                for (int j = 0; j < turn && r.step_s.size() < static_cast<size_t>(iters); j++) {
                    const bool timed = j >= turn - timed_per_turn;
                    if (r.prof) r.prof->set_enabled(timed);
                    const double sec = r.step(tok, B, T, step + j);
                    if (timed) r.step_s.push_back(sec);
                }
            }
        // peak_flops times a matmul of its own: not one of the steps' ops.
        for (auto& r : runs)
            if (r->prof) r->prof->set_enabled(false);
        const FlopsPerToken f = flops_per_token(cfg, T, mo.recompute);
        for (auto& r : runs) {
            double dt = 0;
            std::vector<double> steps_ms;
            for (double x : r->step_s) dt += x / iters, steps_ms.push_back(x * 1e3);
            const PeakFlops peak = peak_flops(r->be, 0);
            const double tps = B * T / dt;
            const MemoryLedger& l = r->be.memory->ledger();
            nlohmann::json out{{"peer", "sixnd"}, {"device", r->be.device}, {"device_name", r->be.device_name},
                               {"shape", shape}, {"dtype", r->dtype}, {"mode", mode}, {"attention", attention},
                               {"recompute", recompute}, {"batch", B}, {"seq_len", T}, {"step_ms", dt * 1e3},
                               {"tokens_per_s", tps}, {"mfu", f.model * tps / peak.flops_per_s},
                               {"hfu", f.hardware * tps / peak.flops_per_s}, {"peak_tflops", peak.flops_per_s / 1e12},
                               {"peak_source", peak.source}, {"achievable_flops", peak.achievable},
                               {"peak_note", peak.note}, {"threads", omp_get_max_threads()}, {"cpu", cpu_host_json()},
                               {"alternated", runs.size() > 1}, {"steps_ms", steps_ms},
                               {"activation_bytes", l.peak(MemCategory::activations)},
                               {"workspace_bytes", l.peak(MemCategory::workspace)},
                               {"peak_bytes", l.peak_total()}};
            if (r->prof) {
                nlohmann::json ops = nlohmann::json::object();
                for (const auto& [key, st] : r->prof->stats()) ops[key] = st.seconds / iters * 1e3;
                out["ops_ms_per_step"] = ops;
            }
            std::printf("%s\n", out.dump().c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "model_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
