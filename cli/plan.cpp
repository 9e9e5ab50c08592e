// sixnd plan: a training run sized before it starts (human table, or --json with every number in
// base units), or, with --check RUN.jsonl, a finished run's predictions beside its measurements.
// The model shape comes from model/ (presets, the parameter layout and its padding, the matmul
// parameter count); everything else is plan/'s arithmetic.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/on_off.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "core/json_fault.h"
#include "core/log.h"
#include "model/backend.h"
#include "model/config.h"
#include "model/cpu/gemm_packed.h"
#include "model/cpu/matmul.h"
#include "model/flops.h"
#include "model/param_layout.h"
#include "plan/check.h"
#include "plan/planner.h"
#include "train/muon.h"
#include "train/peak_flops.h"
#include "train/profile_roof.h"
#include "train/run_log.h"

namespace sixnd::cli {

namespace {

using nlohmann::json;

plan::ModelInfo model_info(const GPTConfig& cfg, const std::string& name, size_t unit_align) {
    plan::ModelInfo m;
    m.name = name;
    m.n_layer = cfg.n_layer;
    m.n_head = cfg.n_head;
    m.n_embd = cfg.n_embd;
    m.vocab = cfg.vocab_size;
    m.padded_vocab = cfg.padded_vocab_size;
    m.max_seq_len = cfg.max_seq_len;
    const ParamLayout layout(cfg, unit_align);
    m.params = static_cast<double>(layout.num_params());
    m.matmul_params = static_cast<double>(matmul_param_count(cfg));
    m.knobs.n_kv_head = cfg.kv_heads();
    m.knobs.hidden = cfg.hidden();
    m.knobs.swiglu = cfg.mlp == MlpKind::swiglu;
    m.knobs.rmsnorm = cfg.norm == NormKind::rmsnorm;
    m.knobs.qk_norm = cfg.qk_norm;
    for (const auto& u : layout.units()) m.layout.units.push_back(static_cast<double>(u.size()));
    for (int k = 0; k < kBlockTensors; k++)
        if (const TensorInfo* t = layout.block(0, static_cast<BlockTensor>(k)); t && layout.hidden_matrix(*t))
            m.block_matrices.emplace_back(t->shape[0], t->shape[1]);
    m.head_matrix = {layout.head().shape[0], layout.head().shape[1]};
    m.tied_head = cfg.tie_embeddings;
    m.layout.total = static_cast<double>(layout.total());
    // A pipeline's end units, padded by ParamLayout itself: the embeddings unit of the model with
    // its head tied (wte, wpe), and of the model with neither head nor wpe (a [Vp, C] alone).
    GPTConfig ends = cfg;
    ends.n_layer = 0;
    ends.tie_embeddings = true;
    m.first_stage_unit = static_cast<double>(ParamLayout(ends, unit_align).units()[0].size());
    ends.pos = PosKind::rope;
    m.head_unit = static_cast<double>(ParamLayout(ends, unit_align).units()[0].size());
    m.muon_units = Muon::matrices_by_unit(layout);
    return m;
}

constexpr const char* kPeakGiven = "FLOP/s from --peak-tflops";

// A plan's device: the table, or this machine's CPU (feature/measured peak, measured bandwidth).
plan::DeviceSpec device_spec(const std::string& key, const std::string& dtype, double peak_tflops) {
    if (key == "cpu") {
        Backend be = make_backend("cpu", parse_dtype(dtype));
        const PeakFlops peak = peak_flops(be, peak_tflops);
        const Roof r = machine_roof(be, peak);
        plan::DeviceSpec s{"cpu", be.device_name, peak.flops_per_s, r.mem_bw, r.mem_bytes, peak.source + "; " + r.bw_source};
        s.peak_what = peak_tflops > 0 ? kPeakGiven : dtype == "fp32" ? "FP32 FLOP/s" : "BF16 FLOP/s";
        return s;
    }
    const plan::DeviceSpec* d = plan::find_device(key);
    if (!d) throw Error("--device", "unknown device '" + key + "' (known: " + plan::device_keys() + ")");
    plan::DeviceSpec s = *d;
    // FP32 GEMMs ask for FP32 compute, not TF32 (model/cuda/matmul.cu): the CUDA cores' peak,
    // as the trainer's MFU counts it.
    if (peak_tflops > 0) {
        s.peak_flops = peak_tflops * 1e12;
        s.source += "; peak from --peak-tflops";
        s.peak_what = kPeakGiven;
    } else if (dtype == "fp32") {
        if (s.fp32_flops <= 0) throw Error("--dtype", "fp32: no FP32 peak is listed for " + s.name + " (give --peak-tflops)");
        s.peak_flops = s.fp32_flops;
        s.peak_what = "plain FP32 FLOP/s (CUDA cores, not TF32)";
    }
    return s;
}

// Far beyond any cluster, and a count an int holds.
constexpr double kMaxDevices = 1 << 24;

int run_check(const std::string& path, bool as_json) {
    plan::LogRecord header;
    std::optional<plan::LogRecord> next_header;
    std::vector<plan::LogRecord> steps;
    read_run_log(path, [&](const plan::LogRecord& rec) {
        const plan::LogFields fields(path, rec);
        const std::string type = fields.has("type") ? fields.text("type") : "";
        // A resumed run appends a header of its own: check the last segment that logged a step,
        // the one whose world size and layout those steps ran with. A resume stopped before its
        // first step (killed, refused) leaves a header with nothing after it.
        if (type == "header") {
            next_header = rec;
        } else if (type == "step") {
            plan::check_step_record(fields);
            if (next_header) {
                header = std::move(*next_header);
                next_header.reset();
                steps.clear();
            }
            steps.push_back(rec);
        } else if (type == "event") {
            plan::check_event_record(fields);
        }
    });
    if (steps.empty() && next_header) header = std::move(*next_header);  // check_run names it: no step
    const plan::LogFields h(path, header);
    if (!h.has("layout")) throw Error(h.where(), "the header has no layout record (written by an older sixnd)");
    const plan::LogFields layout = h.object("layout");
    GPTConfig cfg;
    try {
        cfg = GPTConfig::from_json(header.json.at("model"), h.where());
    } catch (const json::exception& e) {
        throw Error(h.where(), "the model record is missing or malformed: " + json_fault(e));
    }
    cfg.validate(h.where() + ": model");
    plan::ModelInfo m = model_info(cfg, "run", static_cast<size_t>(layout.integer("unit_align", 1)));
    if (m.layout.total != layout.number("total")) throw Error(h.where(), "the header's layout does not match its model");
    const plan::CheckResult r = plan::check_run(path, header, steps, m);
    std::printf("%s", as_json ? (r.to_json().dump(2) + "\n").c_str() : r.to_table().c_str());
    return 0;
}

}  // namespace

int run_plan(int argc, char** argv) {
    CLI::App app{"Size a training run: budget -> model, tokens, memory, time, cost; or check a run's predictions",
                 "sixnd plan"};
    plan::PlanInputs in;
    std::string device, check, recompute = "none", attention = "flash", dtype = "bf16", master = "on", optimizer = "adamw",
                schedule = "1f1b";
    ModelFlags mf;
    double peak_tflops = 0;
    bool as_json = false;
    app.add_option("--check", check, "a finished run's log (JSON Lines): predicted beside measured");
    app.add_flag("--json", as_json, "print JSON (every number in base units)");
    app.add_option("--flops", in.flops, "compute budget C in FLOPs");
    app.add_option("--devices", in.devices, "number of devices");
    app.add_option("--days", in.days, "wall-clock days");
    app.add_option("--mfu", in.mfu, "model FLOPs utilisation, a fraction (0.4 = 40%)");
    app.add_option("--device", device, "one of " + plan::device_keys() + " (cpu: this machine, measured)");
    app.add_option("--peak-tflops", peak_tflops, "override the device's peak TFLOP/s");
    app.add_option("--params", in.params, "parameter count N (instead of a model shape)");
    // The model flags of `sixnd train`; without --model, --n-layer, --n-head and --n-embd over
    // GPT-2's vocabulary, context and architecture (gpt2-124m's).
    add_model_shape_flags(app, mf);
    app.add_option("--tokens", in.tokens, "training tokens D");
    app.add_option("--tokens-per-param", in.tokens_per_param, "D / N (Chinchilla: 20)");
    app.add_option("--batch", in.batch, "micro-batch B per rank (for activations)");
    app.add_option("--seq-len", in.seq_len, "sequence length T (default: the model's context)");
    app.add_option("--grad-accum", in.grad_accum, "micro-steps per optimizer step")->capture_default_str();
    app.add_option("--ranks", in.ranks, "data-parallel ranks (default: --devices / --pipeline-stages, else 1)");
    app.add_option("--zero", in.zero_stage, "ZeRO stage 0-3")->capture_default_str();
    app.add_option("--recompute", recompute, "none, selective or full")->capture_default_str();
    app.add_option("--attention", attention, "naive or flash")->capture_default_str();
    app.add_option("--dtype", dtype, "bf16 or fp32")->capture_default_str();
    app.add_option("--master-weights", master, "on or off")->capture_default_str();
    app.add_option("--optimizer", optimizer, "adamw or muon (its gather and Newton-Schulz buffers, its FP32 all-gather)")
        ->capture_default_str();
    app.add_option("--pipeline-stages", in.pipeline_stages, "pipeline stages P")->capture_default_str();
    app.add_option("--micro-batches", in.micro_batches, "pipeline micro-batches M");
    app.add_option("--pipeline-schedule", schedule, "1f1b (stage i holds min(P - i, M) micro-batches' activations) or gpipe (all M)")
        ->capture_default_str();
    app.add_option("--price-per-device-hour", in.price_per_device_hour, "dollars per device-hour");
    app.add_option("--serve-tokens", in.serve_tokens, "tokens to generate over the model's life");
    app.add_option("--serve-batch", in.serve_batch, "sequences decoded together")->capture_default_str();
    app.add_option("--checkpoint-write-s", in.checkpoint_write_s, "seconds to write one checkpoint");
    app.add_option("--write-bw", in.write_bw, "bytes/s per device for checkpoint writes, when --checkpoint-write-s is not given")
        ->capture_default_str();
    if (!parse_flags(app, argc, argv)) return 0;
    refuse_empty_values(app);
    if (app.count("--check") > 0) {
        for (const CLI::Option* opt : app.get_options())
            if (opt->count() > 0 && opt->get_name() != "--check" && opt->get_name() != "--json")
                throw Error("--check", "takes only a run log (and --json), not " + opt->get_name());
        return run_check(check, as_json);
    }

    in.dtype_bytes = parse_dtype(dtype) == DType::f32 ? 4 : 2;
    in.master_weights = parse_on_off("--master-weights", master);
    if (app.count("--master-weights") && in.dtype_bytes == 4)
        log_warn("--master-weights " + master + " has no effect with --dtype fp32: FP32 parameters are their own master copy");
    in.recompute = parse_recompute(recompute);
    if (attention != "flash" && attention != "naive") throw Error("--attention", "expected naive or flash, got '" + attention + "'");
    in.flash = attention == "flash";
    if (schedule != "1f1b" && schedule != "gpipe") throw Error("--pipeline-schedule", "expected 1f1b or gpipe, got '" + schedule + "'");
    if (app.count("--pipeline-schedule") > 0 && in.pipeline_stages <= 1)
        throw Error("--pipeline-stages", "is missing: --pipeline-schedule is for a pipeline of 2 or more stages");
    in.gpipe = schedule == "gpipe";
    in.muon = parse_optimizer(optimizer) == OptimizerKind::muon;
    check_model_shape_flags(app, mf);
    // Every numeric flag given, held to its range before any arithmetic. Where the planner reads 0
    // as "not given", a given 0 is an error (above 0), not a silent absence.
    const struct {
        const char* flag;
        double value, min;
        bool above;  // > min, else >= min
    } bounds[] = {{"--flops", in.flops, 0, true}, {"--devices", in.devices, 1, false}, {"--days", in.days, 0, true},
                  {"--mfu", in.mfu, 0, true}, {"--peak-tflops", peak_tflops, 0, true}, {"--params", in.params, 1, false},
                  {"--tokens", in.tokens, 1, false}, {"--tokens-per-param", in.tokens_per_param, 0, true},
                  {"--batch", double(in.batch), 1, false}, {"--seq-len", double(in.seq_len), 1, false},
                  {"--grad-accum", double(in.grad_accum), 1, false}, {"--ranks", double(in.ranks), 1, false},
                  {"--pipeline-stages", double(in.pipeline_stages), 1, false},
                  {"--micro-batches", double(in.micro_batches), 1, false},
                  {"--price-per-device-hour", in.price_per_device_hour, 0, true}, {"--serve-tokens", in.serve_tokens, 0, true},
                  {"--serve-batch", double(in.serve_batch), 1, false}, {"--checkpoint-write-s", in.checkpoint_write_s, 0, true},
                  {"--write-bw", in.write_bw, 1, false}};
    for (const auto& b : bounds) {
        if (app.count(b.flag) == 0) continue;
        if (!std::isfinite(b.value)) throw Error(b.flag, "must be a finite number, got " + plan::given(b.value));
        if (b.above ? b.value <= b.min : b.value < b.min)
            throw Error(b.flag, std::string(b.above ? "must be above " : "must be at least ") + plan::given(b.min) + ", got " +
                                    plan::given(b.value));
    }
    if (in.devices != std::floor(in.devices) || in.devices > kMaxDevices)
        throw Error("--devices", "must be a whole number up to " + plan::given(kMaxDevices) + ", got " + plan::given(in.devices));
    if (in.ranks > kMaxDevices) throw Error("--ranks", "must be at most " + plan::given(kMaxDevices) + ", got " + std::to_string(in.ranks));
    // Flags that only a device (or a training time on one) gives a row to: refused without it,
    // as --serve-tokens is, rather than dropped.
    for (const char* flag : {"--peak-tflops", "--price-per-device-hour", "--serve-batch"})
        if (app.count(flag) > 0 && device.empty()) throw Error(flag, "needs --device");
    for (const char* flag : {"--checkpoint-write-s", "--write-bw"})
        if (app.count(flag) > 0 && (device.empty() || in.devices == 0 || (in.mfu == 0 && in.days == 0)))
            throw Error(flag, "is for the checkpoint interval, which needs a training time: --device, --devices and --mfu or --days");
    if (app.count("--checkpoint-write-s") > 0 && app.count("--write-bw") > 0)
        throw Error("--write-bw", "estimates the checkpoint write time, which --checkpoint-write-s already gives: give one of them");
    if (!device.empty()) in.device = device_spec(device, dtype, peak_tflops);
    // Planned on this CPU, a bf16 run keeps the packed GEMM's weight copies when it computes in FP32.
    if (device == "cpu" && in.dtype_bytes == 2 && std::string(cpu::Matmul(DType::bf16).bf16_math()) == "fp32")
        in.weight_copy_panel = cpu::kPanelWidth;

    const bool preset = app.count("--model") > 0;
    const std::string knob = first_knob_flag(app);
    if (preset || !knob.empty()) {
        if (!preset) {
            if (app.count("--n-layer") == 0 || app.count("--n-head") == 0 || app.count("--n-embd") == 0)
                throw Error(knob, "without --model, a model shape needs all of --n-layer, --n-head and --n-embd");
            mf.model = "gpt2-124m";
        }
        const GPTConfig cfg = random_config(mf);
        if (in.seq_len > cfg.max_seq_len)
            throw Error("--seq-len", std::to_string(in.seq_len) + " exceeds the model's context " + std::to_string(cfg.max_seq_len));
        // The units are padded to 64 x the ranks that shard them (model/param_layout).
        const auto ranks = static_cast<size_t>(plan::data_parallel_ranks(in));
        in.model = model_info(cfg, preset && knob.empty() ? mf.model : cfg.describe(), 64 * ranks);
    } else if (app.count("--vocab-size") > 0 || app.count("--max-seq-len") > 0) {
        throw Error("--vocab-size/--max-seq-len", "need a model (--model or --n-layer/--n-head/--n-embd)");
    }
    if (in.muon && !in.model)
        throw Error("--optimizer", "muon needs a model (--model or --n-layer/--n-head/--n-embd): its buffers follow the matrices");
    // Flags whose only rows need a model (the attention FLOPs) or activations (--batch): refused
    // without them, as the device's flags are, rather than dropped.
    if (app.count("--seq-len") > 0 && !in.model)
        throw Error("--seq-len", "needs a model (--model or --n-layer/--n-head/--n-embd): a parameter count has no attention term");
    for (const char* flag : {"--recompute", "--attention"})
        if (app.count(flag) > 0 && in.batch == 0) throw Error(flag, "is for activation memory, which needs --batch (and a model)");
    if (app.count("--grad-accum") > 0 && in.batch == 0 && plan::data_parallel_ranks(in) <= 1)
        throw Error("--grad-accum", "is for the tokens per step, which need --batch (and a model), or for ZeRO's traffic between "
                                    "--ranks (or --devices) above 1");
    const plan::Report r = plan::make_plan(in);
    std::printf("%s", as_json ? (r.to_json().dump(2) + "\n").c_str() : r.to_table().c_str());
    return 0;
}

}  // namespace sixnd::cli
