#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/zero_slots.h"
#include "plan/scaling.h"

namespace sixnd::plan {

namespace {

std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.4g", v);
    return b;
}

bool close(double a, double b) { return std::fabs(a - b) <= 0.01 * std::max(std::fabs(a), std::fabs(b)); }

struct Resolved {
    double C = 0, N = 0, D = 0;
    double attention_per_token = 0;  // added to 6N per token when the shape is known
    std::string how;
};

// C, N and D from whichever of them (and tokens per parameter) the inputs fix.
Resolved resolve_cnd(const PlanInputs& in, double hw_flops) {
    Resolved r;
    if (in.params > 0 && in.model) throw Error("--params", "give --params or a model shape (--model), not both");
    double N = in.model ? in.model->matmul_params : in.params;
    double D = in.tokens;
    const double ratio = in.tokens_per_param;
    if (in.model) {
        const int T = in.seq_len > 0 ? in.seq_len : in.model->max_seq_len;
        r.attention_per_token = attention_flops_per_token(in.model->n_layer, in.model->n_embd, T);
    }
    const double a = r.attention_per_token;
    double C = in.flops;
    if (C > 0 && hw_flops > 0 && !close(C, hw_flops))
        throw Error("--flops", "is " + num(C) + " but --devices x --days x --mfu x peak is " + num(hw_flops) +
                                   ": give one compute budget");
    if (C == 0) C = hw_flops;
    if (D > 0 && ratio > 0 && N > 0)
        throw Error("--tokens-per-param", "over-determined: --tokens and the model already fix it (" + num(D / N) + ")");
    if (ratio > 0 && N > 0) D = ratio * N;
    if (ratio > 0 && D > 0 && N == 0) N = D / ratio;
    const std::string budget = in.flops > 0 ? "--flops" : "--devices x --days x --mfu";
    if (N > 0 && D > 0) {
        const double c = (6 * N + a) * D;
        if (C > 0 && !close(C, c))
            throw Error(budget, "is " + num(C) + " FLOPs but the model and tokens need 6ND = " + num(c) +
                                    ": give two of the budget, the model and the tokens");
        r.how = "N and D given; C = 6ND";
        C = c;
    } else if (C > 0 && N > 0) {
        D = C / (6 * N + a);
        r.how = "C and N given; D = C / 6N";
    } else if (C > 0 && D > 0) {
        N = C / (6 * D);
        r.how = "C and D given; N = C / 6D";
    } else if (C > 0 && ratio > 0) {
        N = std::sqrt(C / (6 * ratio));
        D = ratio * N;
        r.how = "C and tokens per parameter given; N = sqrt(C / 6r)";
    } else if (C > 0) {
        N = chinchilla_params(C);
        D = kChinchillaTokensPerParam * N;
        r.how = "C given; Chinchilla N = sqrt(C/120), D = 20N";
    } else if (N > 0) {
        D = kChinchillaTokensPerParam * N;
        r.how = "N given; Chinchilla D = 20N";
        C = (6 * N + a) * D;
    } else if (D > 0) {
        N = D / kChinchillaTokensPerParam;
        r.how = "D given; Chinchilla N = D/20";
        C = 6 * N * D;
    } else if (ratio > 0) {
        throw Error("--tokens-per-param", "needs a model (--params or --model), --tokens or a compute budget");
    } else {
        throw Error("plan", "nothing to plan: give a compute budget (--flops, or --devices --days --mfu --device), "
                            "a model (--params or --model) or --tokens");
    }
    r.C = C;
    r.N = N;
    r.D = D;
    return r;
}

void check_hardware_flags(const PlanInputs& in) {
    if ((in.devices > 0 || in.days > 0 || in.mfu > 0) && !in.device)
        throw Error("--device", "is missing: --devices, --days and --mfu need a device (its peak FLOP/s)");
    if (in.days > 0 && in.devices == 0) throw Error("--devices", "is missing: --days needs the number of devices");
    if (in.mfu > 0 && in.devices == 0) throw Error("--devices", "is missing: --mfu needs the number of devices");
    if (in.mfu > 1) throw Error("--mfu", "is a fraction of the peak (0 < MFU <= 1), got " + num(in.mfu));
    if (in.pipeline_stages > 1 && in.micro_batches <= 0)
        throw Error("--micro-batches", "is missing: --pipeline-stages needs the number of micro-batches");
    if (in.micro_batches > 0 && in.pipeline_stages <= 1)
        throw Error("--pipeline-stages", "is missing: --micro-batches is for a pipeline of 2 or more stages");
    if (in.model && in.pipeline_stages > in.model->n_layer)
        throw Error("--pipeline-stages", std::to_string(in.pipeline_stages) + " stages for the model's " +
                                             std::to_string(in.model->n_layer) + " layers: each stage needs at least one layer");
    if (in.zero_stage < 0 || in.zero_stage > 3) throw Error("--zero", "stage must be 0, 1, 2 or 3");
    if (in.batch > 0 && !in.model) throw Error("--model", "is missing: activation memory at --batch needs a model shape");
    if (in.serve_tokens > 0 && !in.device) throw Error("--device", "is missing: serving needs a device's memory bandwidth");
}

}  // namespace

int data_parallel_ranks(const PlanInputs& in) {
    const int stages = std::max(1, in.pipeline_stages);
    const std::string per = std::to_string(stages) + " pipeline stage" + (stages > 1 ? "s" : "");
    if (in.devices <= 0) return in.ranks > 0 ? in.ranks : 1;
    if (in.ranks > 0) {
        if (static_cast<double>(in.ranks) * stages != in.devices)
            throw Error("--ranks", std::to_string(in.ranks) + " data-parallel ranks x " + per + " is not --devices " + num(in.devices) +
                                       " (devices = ranks x pipeline stages: sixnd has no tensor parallelism)");
        return in.ranks;
    }
    const double ranks = in.devices / stages;
    if (ranks != std::floor(ranks))
        throw Error("--devices", num(in.devices) + " devices do not split into " + per + " of equal data-parallel ranks");
    return static_cast<int>(ranks);
}

double cpu_weight_copy_bytes(const ModelInfo& m, int zero_stage, int panel_width) {
    const auto padded = [panel_width](double n) { return std::ceil(n / panel_width) * panel_width; };
    const auto both_roles = [&padded](std::pair<int, int> w) { return 2.0 * (w.first * padded(w.second) + w.second * padded(w.first)); };
    double block = 0;
    for (const auto& w : m.block_matrices) block += both_roles(w);
    const int block_copies = zero_stage == 3 ? std::min(m.n_layer, kZero3UnitSlots) : m.n_layer;
    return both_roles(m.head_matrix) + block_copies * block;
}

Report make_plan(const PlanInputs& in) {
    check_hardware_flags(in);
    const DeviceSpec* dev = in.device ? &*in.device : nullptr;
    const double hw = (dev && in.devices > 0 && in.days > 0 && in.mfu > 0)
                          ? in.devices * in.days * 86400 * dev->peak_flops * in.mfu : 0;
    const Resolved r = resolve_cnd(in, hw);
    Report rep;
    const std::string N_is = in.model ? "N: parameters in matmuls (" + in.model->name + ")" : in.params > 0 ? "N = --params" : "N";

    // Compute.
    rep.text("compute", "resolved_from", r.how);
    rep.add("compute", "flops", r.C, Unit::flops, r.attention_per_token > 0 ? "C = 6ND + 12 L C T D" : "C = 6ND");
    rep.add("compute", "flops_6nd", training_flops(r.N, r.D), Unit::flops, "6ND");
    if (r.attention_per_token > 0)
        rep.add("compute", "attention_flops", r.attention_per_token * r.D, Unit::flops, "12 L C T per token (sixnd's counter)");
    rep.add("compute", "params", r.N, Unit::params, N_is);
    if (in.model) rep.add("compute", "params_total", in.model->params, Unit::params, "every parameter (with wpe)");
    rep.add("compute", "tokens", r.D, Unit::tokens, "D");
    rep.add("compute", "tokens_per_param", r.D / r.N, Unit::ratio, "D / N");
    rep.add("compute", "vs_chinchilla_20", r.D / r.N / kChinchillaTokensPerParam, Unit::ratio, "(D / N) / 20");
    rep.add("compute", "chinchilla_params", chinchilla_params(r.C), Unit::params, "sqrt(C / 120)");
    rep.add("compute", "chinchilla_tokens", kChinchillaTokensPerParam * chinchilla_params(r.C), Unit::tokens, "20 sqrt(C / 120)");

    // Time and cost.
    double seconds = 0;
    if (dev) {
        rep.text("device", "name", dev->name, dev->source);
        rep.add("device", "peak_flops", dev->peak_flops, Unit::per_second, dev->peak_what);
        rep.add("device", "mem_bw", dev->mem_bw, Unit::per_second, "bytes/s");
        rep.add("device", "mem_bytes", dev->mem_bytes, Unit::bytes, "");
        rep.add("device", "ridge_flop_per_byte", ridge_point(dev->peak_flops, dev->mem_bw), Unit::ratio, "peak / bandwidth");
    }
    if (dev && in.devices > 0) {
        double mfu = in.mfu;
        if (mfu == 0 && in.days > 0) {
            mfu = r.C / (in.devices * in.days * 86400 * dev->peak_flops);
            rep.add("time", "mfu_required", mfu, Unit::ratio, "C / (devices x days x peak)");
            if (mfu > 1) rep.note("the budget needs an MFU above 100%: more devices or days");
        }
        if (mfu > 0) {
            seconds = training_seconds(r.C, in.devices, dev->peak_flops, mfu);
            rep.add("time", "seconds", seconds, Unit::seconds, "C / (devices x peak x MFU)");
            rep.add("time", "device_hours", seconds * in.devices / 3600, Unit::ratio, "devices x t / 3600");
            if (in.price_per_device_hour > 0)
                rep.add("time", "dollars", seconds * in.devices / 3600 * in.price_per_device_hour, Unit::dollars,
                        "device-hours x --price-per-device-hour");
        }
    }

    // Memory per device.
    const int ranks = data_parallel_ranks(in);
    const LayoutShape layout = in.model ? in.model->layout : layout_from_count(r.N);
    const StateBytes s = model_state_bytes(layout, in.zero_stage, ranks, in.dtype_bytes, in.master_weights);
    const double P = std::max(1, in.pipeline_stages);
    const std::string per = P > 1 ? " / pipeline stages" : "";
    rep.add("memory", "ranks", ranks, Unit::none, "data-parallel ranks sharing the ZeRO states");
    rep.add("memory", "params", s.params / P, Unit::bytes, "e psi (stage 3: e psi/n + gathered units)" + per);
    rep.add("memory", "grads", s.grads / P, Unit::bytes, "e psi (stage 2-3: e psi/n + buckets)" + per);
    rep.add("memory", "master", s.master / P, Unit::bytes, "4 psi (stage 1-3: /n)" + per);
    rep.add("memory", "adam_m", s.adam_m / P, Unit::bytes, "4 psi (stage 1-3: /n)" + per);
    rep.add("memory", "adam_v", s.adam_v / P, Unit::bytes, "4 psi (stage 1-3: /n)" + per);
    rep.add("memory", "model_states", s.total() / P, Unit::bytes,
            "zero" + std::to_string(in.zero_stage) + "_bytes_per_param x psi (+ unit buffers)" + per);
    rep.text("memory", "optimizer", in.muon ? "muon" : "adamw", "master, m and v for every parameter either way (Muon's momentum is m)");
    double total = s.total() / P + s.workspace;
    // Muon's buffers and gather, at the rank whose slices touch the widest matrix: every matrix
    // overlaps some rank's slice, so that rank's Newton-Schulz buffer is the whole units' largest.
    const double ns_floats = in.muon ? static_cast<double>(muon_ns_floats(in.model->muon_units, 0, 1, 0)) : 0;
    auto muon_at = [&](int stage) { return in.muon ? muon_cost(layout, stage, ranks, ns_floats) : MuonCost{}; };
    const MuonCost muon = muon_at(in.zero_stage);
    if (in.muon) {
        rep.add("memory", "muon_workspace", muon.workspace / P, Unit::bytes,
                "one FP32 block unit + the largest Newton-Schulz buffer (2 s^2 + s l floats)" + per);
        total += muon.workspace / P;
    }
    if (in.model && in.batch > 0) {
        const int T = in.seq_len > 0 ? in.seq_len : in.model->max_seq_len;
        const ActivationShape sh = in.model->activation_shape(in.flash);
        const ActivationBytes a = activation_bytes(sh, in.batch, T, in.recompute, in.dtype_bytes);
        rep.add("memory", "activations", a.activations / P, Unit::bytes, "sixnd's kept tensors at B x T, per recompute policy" + per);
        for (Recompute k : {Recompute::none, Recompute::selective, Recompute::full}) {
            const char* n = k == Recompute::none ? "activations_none" : k == Recompute::selective ? "activations_selective" : "activations_full";
            rep.add("memory", n, activation_bytes(sh, in.batch, T, k, in.dtype_bytes).activations / P, Unit::bytes, "");
        }
        rep.add("memory", "workspace", a.workspace + s.workspace, Unit::bytes, "backward 9 C e per token (GPT-2) + ZeRO scratch slice");
        total += a.activations / P + a.workspace;
    } else {
        rep.note("activations are left out: give --model and --batch (and --seq-len) to count them");
    }
    if (in.model && in.weight_copy_panel > 0) {
        const double copies = cpu_weight_copy_bytes(*in.model, in.zero_stage, in.weight_copy_panel) / P;
        rep.add("memory", "weight_copies", copies, Unit::bytes,
                "bf16 in FP32 arithmetic on this CPU: packed panels of each weight, 2 bytes per element and role");
        total += copies;
    }
    rep.add("memory", "total", total, Unit::bytes, "sum of the above");
    // Each stage's bytes per parameter in this dtype, with or without master weights: the
    // model states of a bare count (no unit buffers, no padding), as the ZeRO paper counts them.
    const StateBytes one = model_state_bytes(layout_from_count(1), 0, 1, in.dtype_bytes, in.master_weights);
    const auto term = [](double bytes, bool sharded) { return num(bytes) + (sharded ? "/n" : ""); };
    for (int st = 0; st <= 3; st++)
        rep.add("memory", "zero" + std::to_string(st) + "_bytes_per_param",
                model_state_bytes(layout_from_count(1), st, ranks, in.dtype_bytes, in.master_weights).total(), Unit::ratio,
                term(one.params, st >= 3) + " + " + term(one.grads, st >= 2) + " + " +
                    term(one.master + one.adam_m + one.adam_v, st >= 1) + " (params + grads + master, m, v)");
    if (dev) rep.text("memory", "fits", total <= dev->mem_bytes ? "yes" : "no", "total <= device memory");

    // Communication.
    if (ranks > 1) {
        auto comm_at = [&](int stage) {
            CommBytes c = comm_bytes_per_step(layout, stage, ranks, in.dtype_bytes, std::max(1, in.grad_accum));
            c.all_gather += muon_at(stage).all_gather;
            return c;
        };
        const CommBytes c = comm_at(in.zero_stage);
        rep.add("comm", "bytes_per_rank_per_step", c.total(), Unit::bytes,
                in.muon ? "ring: all-reduce 2(n-1)/n, RS/AG (n-1)/n of psi e; Muon's FP32 block units (n-1)/n x 4 bytes"
                        : "ring: all-reduce 2(n-1)/n, RS/AG (n-1)/n of psi e");
        rep.add("comm", "all_reduce", c.all_reduce, Unit::bytes, "");
        rep.add("comm", "reduce_scatter", c.reduce_scatter, Unit::bytes, "");
        rep.add("comm", "all_gather", c.all_gather, Unit::bytes, "");
        for (int st = 0; st <= 3; st++) rep.add("comm", "zero" + std::to_string(st), comm_at(st).total(), Unit::bytes, "");
        if (!in.model)
            rep.note("ZeRO-3's bytes from a parameter count are the paper's 3 psi (every forward and backward gathers "
                     "every parameter); a model shape (--model) counts the units sixnd's gather slots keep");
    }
    if (in.batch > 0 && in.model) {
        const int T = in.seq_len > 0 ? in.seq_len : in.model->max_seq_len;
        const double step_tokens = static_cast<double>(in.batch) * T * ranks * std::max(1, in.grad_accum);
        rep.add("steps", "tokens_per_step", step_tokens, Unit::tokens, "B x T x ranks x grad accumulation");
        rep.add("steps", "steps", r.D / step_tokens, Unit::ratio, "D / tokens per step");
        rep.add("steps", "flops_per_step", (6 * r.N + r.attention_per_token) * step_tokens, Unit::flops, "(6N + 12LCT) x tokens per step");
    }

    // Pipeline.
    if (in.pipeline_stages > 1)
        rep.add("pipeline", "bubble", pipeline_bubble(in.pipeline_stages, in.micro_batches), Unit::ratio, "(P - 1) / (M + P - 1)");

    // Reliability.
    if (in.devices > 0 && seconds > 0) {
        const double days = seconds / 86400;
        const Interruptions it = expected_interruptions(in.devices, days);
        rep.add("reliability", "gpu_days", in.devices * days, Unit::ratio, "devices x days");
        rep.add("reliability", "interruptions", it.expected, Unit::ratio,
                "419 per 54 days on 16,000 H100s, scaled in GPU-days (an extrapolation from one data point)");
        rep.add("reliability", "mtbf_s", it.mtbf_s, Unit::seconds, "job time between interruptions");
        double write_s = in.checkpoint_write_s;
        std::string how = "--checkpoint-write-s";
        if (write_s <= 0) {
            // A checkpoint holds the parameters and the optimizer state (master weights where
            // this dtype keeps them, m, v): the model states less the gradients.
            const double per_param = one.total() - one.grads;
            write_s = per_param * r.N / ranks / in.write_bw;
            how = num(per_param) + " bytes (params + optimizer state) x N / ranks at " + num(in.write_bw) +
                  " B/s per device (assumed)";
        }
        rep.add("reliability", "checkpoint_write_s", write_s, Unit::seconds, how);
        rep.add("reliability", "checkpoint_interval_s", young_daly_interval(write_s, it.mtbf_s), Unit::seconds,
                "Young/Daly: sqrt(2 x write time x MTBF)");
    }

    // Serving.
    if (dev) {
        const double wbytes = in.dtype_bytes * r.N;
        const double tps = decode_tokens_per_s(dev->mem_bw, wbytes, in.serve_batch);
        rep.add("serving", "decode_tokens_per_s", tps, Unit::per_second, "batch x bandwidth / weight bytes (weights read once per step)");
        if (in.price_per_device_hour > 0)
            rep.add("serving", "dollars_per_million_tokens", in.price_per_device_hour / 3600 / tps * 1e6, Unit::dollars,
                    "price / 3600 / tokens/s x 1e6");
        if (in.serve_tokens > 0) {
            rep.add("serving", "serve_device_hours", in.serve_tokens / tps / 3600, Unit::ratio, "tokens / tokens/s / 3600");
            if (in.mfu > 0 || in.days > 0) {
                const double mfu = in.mfu > 0 ? in.mfu : r.C / (in.devices * in.days * 86400 * dev->peak_flops);
                const double N0 = chinchilla_params(r.C), D0 = kChinchillaTokensPerParam * N0;
                const double loss = chinchilla_loss(N0, D0);
                rep.add("tradeoff", "iso_loss", loss, Unit::ratio, "L = E + A/N^a + B/D^b (Chinchilla data, Besiroglu et al. 2024 fit) at sqrt(C/120), 20N");
                int k = 0;
                for (double f : {1.0, 0.75, 0.5, 0.35, 0.25}) {
                    const double n = f * N0, d = tokens_for_loss(n, loss);
                    if (d <= 0) continue;
                    const double train_h = training_flops(n, d) / (dev->peak_flops * mfu) / 3600;
                    const double serve_h = in.serve_tokens / decode_tokens_per_s(dev->mem_bw, in.dtype_bytes * n, in.serve_batch) / 3600;
                    const std::string p = "option" + std::to_string(k++) + "_";
                    rep.add("tradeoff", p + "params", n, Unit::params, f == 1.0 ? "Chinchilla point" : num(f) + " x Chinchilla N");
                    rep.add("tradeoff", p + "tokens", d, Unit::tokens, "tokens for the same loss");
                    rep.add("tradeoff", p + "tokens_per_param", d / n, Unit::ratio, "");
                    rep.add("tradeoff", p + "train_device_hours", train_h, Unit::ratio, "6ND / (peak x MFU)");
                    rep.add("tradeoff", p + "serve_device_hours", serve_h, Unit::ratio, "serve tokens / decode tokens/s");
                    rep.add("tradeoff", p + "total_device_hours", train_h + serve_h, Unit::ratio, "");
                    if (in.price_per_device_hour > 0)
                        rep.add("tradeoff", p + "total_dollars", (train_h + serve_h) * in.price_per_device_hour, Unit::dollars, "");
                }
            } else {
                rep.note("the training-versus-serving trade needs --mfu (or --days) to price the training");
            }
        }
    }
    return rep;
}

}  // namespace sixnd::plan
