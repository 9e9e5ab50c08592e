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
        const std::string cost = a > 0 ? "(6N + 12 L C T) D" : "6ND";
        if (C > 0 && !close(C, c))
            throw Error(budget, "is " + num(C) + " FLOPs but the model and tokens need " + cost + " = " + num(c) +
                                    ": give two of the budget, the model and the tokens");
        r.how = "N and D given; C = " + cost;
        C = c;
    } else if (C > 0 && N > 0) {
        D = C / (6 * N + a);
        r.how = a > 0 ? "C and N given; D = C / (6N + 12 L C T)" : "C and N given; D = C / 6N";
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
    // Below one parameter or one token there is no run to plan: the budget (or ratio) buys none.
    if (N < 1 || D < 1)
        throw Error("plan", r.how + " gives N = " + num(N) + " parameters and D = " + num(D) +
                                " tokens: a run needs at least one of each (a larger budget, or another ratio)");
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
    if (in.mfu > 1) throw Error("--mfu", "is a fraction of the peak (0 < MFU <= 1), got " + given(in.mfu));
    if (in.pipeline_stages > 1 && in.micro_batches <= 0)
        throw Error("--micro-batches", "is missing: --pipeline-stages needs the number of micro-batches");
    if (in.micro_batches > 0 && in.pipeline_stages <= 1)
        throw Error("--pipeline-stages", "is missing: --micro-batches is for a pipeline of 2 or more stages");
    if (in.model && in.pipeline_stages > in.model->n_layer)
        throw Error("--pipeline-stages", std::to_string(in.pipeline_stages) + " stages for the model's " +
                                             std::to_string(in.model->n_layer) + " layers: each stage needs at least one layer");
    if (in.zero_stage < 0 || in.zero_stage > 3) throw Error("--zero", "stage must be 0, 1, 2 or 3, got " + std::to_string(in.zero_stage));
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
            throw Error("--ranks", std::to_string(in.ranks) + " data-parallel ranks x " + per + " is not --devices " + given(in.devices) +
                                       " (devices = ranks x pipeline stages: sixnd has no tensor parallelism)");
        return in.ranks;
    }
    const double ranks = in.devices / stages;
    if (ranks != std::floor(ranks))
        throw Error("--devices", given(in.devices) + " devices do not split into " + per + " of equal data-parallel ranks");
    return static_cast<int>(ranks);
}

double cpu_weight_copy_bytes(const ModelInfo& m, int zero_stage, int panel_width) {
    return cpu_weight_copy_bytes(m, zero_stage, panel_width, m.n_layer, true);
}

double cpu_weight_copy_bytes(const ModelInfo& m, int zero_stage, int panel_width, int layers, bool head) {
    const auto padded = [panel_width](double n) { return std::ceil(n / panel_width) * panel_width; };
    const auto both_roles = [&padded](std::pair<int, int> w) { return 2.0 * (w.first * padded(w.second) + w.second * padded(w.first)); };
    double block = 0;
    for (const auto& w : m.block_matrices) block += both_roles(w);
    const int block_copies = zero_stage == 3 ? std::min(layers, kZero3UnitSlots) : layers;
    return (head ? both_roles(m.head_matrix) : 0) + block_copies * block;
}

namespace {

// One device's memory: a pipeline stage's, or without a pipeline the whole model's.
struct StageMemory {
    int first_layer = 0;
    StageShare share;
    LayoutShape units;          // what this stage holds: its ranks shard and sync these alone
    double block_elements = 0;  // its blocks' share of them
    StateBytes states;
    double muon = 0, activations = 0, workspace = 0, copies = 0;  // workspace: backward + ZeRO scratch
    double total() const { return states.total() + muon + activations + workspace + copies; }
};

// sixnd has no pipeline engine, so a plan's stages are the usual cut at unit boundaries: the
// blocks as evenly as they divide (the first L mod P stages one more), the embeddings on the
// first stage, the final norm and the LM head on the last (tied or not, the last stage keeps
// its own [Vp, C]); each stage's units sharded over its ranks by the ZeRO table. Under 1F1B
// stage i has min(P - i, M) micro-batches between their forward and their backward, under
// GPipe all M. From a parameter count alone the stages are not known: the model states are
// split evenly.
std::vector<StageMemory> stage_memory(const PlanInputs& in, const LayoutShape& layout, int ranks, const MuonCost& muon) {
    const int P = std::max(1, in.pipeline_stages);
    if (!in.model) {
        StageMemory d;
        d.states = model_state_bytes(layout, in.zero_stage, ranks, in.dtype_bytes, in.master_weights);
        for (double* x : {&d.states.params, &d.states.grads, &d.states.master, &d.states.adam_m, &d.states.adam_v}) *x /= P;
        d.workspace = d.states.workspace;
        d.units = layout_from_count(layout.total / P);
        return {d};
    }
    const ModelInfo& m = *in.model;
    const int L = m.n_layer;
    const int T = in.seq_len > 0 ? in.seq_len : m.max_seq_len;
    std::vector<StageMemory> stages;
    for (int i = 0, next = 0; i < P; i++) {
        StageMemory st;
        st.first_layer = next;
        st.share = {L / P + (i < L % P ? 1 : 0), i == 0, i == P - 1,
                    P == 1 ? 1 : in.gpipe ? in.micro_batches : std::min(P - i, in.micro_batches)};
        next += st.share.layers;
        LayoutShape part = layout;
        if (P > 1) {
            part.units = {st.share.first ? m.first_stage_unit : st.share.last ? m.head_unit : 0};
            for (int l = st.first_layer; l < next; l++) part.units.push_back(layout.units.at(1 + l));
            if (st.share.last) part.units.push_back(layout.units.back());
            part.total = 0;
            for (double u : part.units) part.total += u;
        }
        st.units = part;
        for (int l = st.first_layer; l < next; l++) st.block_elements += layout.units.at(1 + l);
        st.states = model_state_bytes(part, in.zero_stage, ranks, in.dtype_bytes, in.master_weights);
        st.workspace = st.states.workspace;
        // Every stage holds at least one block, and the blocks are alike.
        st.muon = muon.workspace;
        if (in.batch > 0) {
            const ActivationBytes a = activation_bytes(m.activation_shape(in.flash), in.batch, T, in.recompute, in.dtype_bytes, st.share);
            st.activations = a.activations;
            st.workspace += a.workspace;
        }
        if (in.weight_copy_panel > 0)
            st.copies = cpu_weight_copy_bytes(m, in.zero_stage, in.weight_copy_panel, st.share.layers, st.share.last);
        stages.push_back(st);
    }
    return stages;
}

}  // namespace

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
    if (in.model) rep.add("compute", "params_total", in.model->params, Unit::params, "every parameter (with wpe, and the rows of the padded vocabulary)");
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

    // Memory per device: each pipeline stage's, and the heaviest decides the fit.
    const int ranks = data_parallel_ranks(in);
    const LayoutShape layout = in.model ? in.model->layout : layout_from_count(r.N);
    const int P = std::max(1, in.pipeline_stages);
    // Under a pipeline a step runs M micro-batches of B per rank through the stages.
    const int M = P > 1 ? in.micro_batches : 1;
    // Muon's buffers and gather, at the rank whose slices touch the widest matrix: every matrix
    // overlaps some rank's slice, so that rank's Newton-Schulz buffer is the whole units' largest.
    const double ns_floats = in.muon ? static_cast<double>(muon_ns_floats(in.model->muon_units, 0, 1, 0)) : 0;
    auto muon_at = [&](int stage) { return in.muon ? muon_cost(layout, stage, ranks, ns_floats) : MuonCost{}; };
    const std::vector<StageMemory> stages = stage_memory(in, layout, ranks, muon_at(in.zero_stage));
    const size_t h = static_cast<size_t>(
        std::max_element(stages.begin(), stages.end(), [](const StageMemory& x, const StageMemory& y) { return x.total() < y.total(); }) -
        stages.begin());
    const StageMemory& d = stages[h];
    const bool by_stage = P > 1 && in.model;
    const std::string per = !by_stage && P > 1   ? " / pipeline stages (evenly: a model shape gives each stage its own)"
                            : by_stage ? " (stage " + std::to_string(h) + ", the heaviest)"
                                       : "";
    rep.add("memory", "ranks", ranks, Unit::count, "data-parallel ranks sharing the ZeRO states");
    if (by_stage) rep.add("memory", "stage", static_cast<double>(h), Unit::none, "the pipeline stage whose device these rows are");
    rep.add("memory", "params", d.states.params, Unit::bytes, "e psi (stage 3: e psi/n + gathered units)" + per);
    rep.add("memory", "grads", d.states.grads, Unit::bytes, "e psi (stage 2-3: e psi/n + buckets)" + per);
    const bool master = d.states.master > 0;
    rep.add("memory", "master", d.states.master, Unit::bytes,
            master ? "4 psi (stage 1-3: /n)" + per
                   : in.dtype_bytes == 4 ? "none: FP32 parameters are their own master copy" : "none: --master-weights off");
    rep.add("memory", "adam_m", d.states.adam_m, Unit::bytes, "4 psi (stage 1-3: /n)" + per);
    rep.add("memory", "adam_v", d.states.adam_v, Unit::bytes, "4 psi (stage 1-3: /n)" + per);
    rep.add("memory", "model_states", d.states.total(), Unit::bytes,
            "zero" + std::to_string(in.zero_stage) + "_bytes_per_param x psi (+ unit buffers)" + per);
    rep.text("memory", "optimizer", in.muon ? "muon" : "adamw", "master, m and v for every parameter either way (Muon's momentum is m)");
    if (in.muon)
        rep.add("memory", "muon_workspace", d.muon, Unit::bytes, "one FP32 block unit + the largest Newton-Schulz buffer (2 s^2 + s l floats)");
    if (in.model && in.batch > 0) {
        const int T = in.seq_len > 0 ? in.seq_len : in.model->max_seq_len;
        const ActivationShape sh = in.model->activation_shape(in.flash);
        rep.add("memory", "activations", d.activations, Unit::bytes, "sixnd's kept tensors at B x T, per recompute policy" + per);
        for (Recompute k : {Recompute::none, Recompute::selective, Recompute::full}) {
            const char* n = k == Recompute::none ? "activations_none" : k == Recompute::selective ? "activations_selective" : "activations_full";
            rep.add("memory", n, activation_bytes(sh, in.batch, T, k, in.dtype_bytes, d.share).activations, Unit::bytes, "");
        }
        rep.add("memory", "workspace", d.workspace, Unit::bytes, "backward 9 C e per token (GPT-2) + ZeRO scratch slice");
    } else {
        // Without activations the workspace is ZeRO's scratch slice alone, still in the total.
        if (d.workspace > 0) rep.add("memory", "workspace", d.workspace, Unit::bytes, "ZeRO scratch slice" + per);
        rep.note("activations are left out: give --model and --batch (and --seq-len) to count them");
    }
    if (d.copies > 0)
        rep.add("memory", "weight_copies", d.copies, Unit::bytes,
                "bf16 in FP32 arithmetic on this CPU: packed panels of each weight, 2 bytes per element and role");
    rep.add("memory", "total", d.total(), Unit::bytes, "sum of the above");
    // Each stage's bytes per parameter in this dtype, with or without master weights: the
    // model states of a bare count (no unit buffers, no padding), as the ZeRO paper counts them.
    const StateBytes one = model_state_bytes(layout_from_count(1), 0, 1, in.dtype_bytes, in.master_weights);
    const auto term = [](double bytes, bool sharded) { return num(bytes) + (sharded ? "/n" : ""); };
    for (int st = 0; st <= 3; st++)
        rep.add("memory", "zero" + std::to_string(st) + "_bytes_per_param",
                model_state_bytes(layout_from_count(1), st, ranks, in.dtype_bytes, in.master_weights).total(), Unit::ratio,
                term(one.params, st >= 3) + " + " + term(one.grads, st >= 2) + " + " +
                    term(one.master + one.adam_m + one.adam_v, st >= 1) + (master ? " (params + grads + master, m, v)" : " (params + grads + m, v)"));
    if (dev) rep.text("memory", "fits", d.total() <= dev->mem_bytes ? "yes" : "no", "the heaviest stage's total <= device memory");
    if (by_stage) {
        const std::string in_flight = in.gpipe ? "GPipe: all M micro-batches" : "1F1B: min(P - i, M) micro-batches at stage i";
        for (size_t i = 0; i < stages.size(); i++) {
            const StageMemory& st = stages[i];
            const std::string k = "stage" + std::to_string(i) + "_";
            const int a = st.first_layer, z = st.first_layer + st.share.layers - 1;
            rep.add("memory_by_stage", k + "layers", st.share.layers, Unit::none,
                    std::string(st.share.first ? "embeddings + " : "") + "h." + std::to_string(a) + (z > a ? "-h." + std::to_string(z) : "") +
                        (st.share.last ? " + final norm + LM head" : ""));
            rep.add("memory_by_stage", k + "model_states", st.states.total(), Unit::bytes, "ZeRO table over this stage's units");
            if (in.batch > 0) {
                rep.add("memory_by_stage", k + "in_flight", st.share.in_flight, Unit::count, in_flight);
                rep.add("memory_by_stage", k + "activations", st.activations, Unit::bytes, "kept tensors x micro-batches in flight + shared scratch");
            }
            rep.add("memory_by_stage", k + "workspace", st.workspace + st.muon, Unit::bytes,
                    in.muon ? "backward + ZeRO scratch + Muon's buffers" : "backward + ZeRO scratch");
            if (st.copies > 0) rep.add("memory_by_stage", k + "weight_copies", st.copies, Unit::bytes, "this stage's blocks (+ LM head)");
            rep.add("memory_by_stage", k + "total", st.total(), Unit::bytes, i == h ? "the heaviest: decides the fit" : "");
        }
    }

    // Communication.
    if (ranks > 1) {
        // The data-parallel ranks of a pipeline stage sync that stage's units alone, once per
        // micro-batch where ZeRO 2-3 reduce-scatter every micro-step; the busiest stage's shown.
        const double micro_steps = static_cast<double>(std::max(1, in.grad_accum)) * M;
        auto comm_of = [&](const StageMemory& st, int zero) {
            CommBytes c = comm_bytes_per_step(st.units, zero, ranks, in.dtype_bytes, micro_steps);
            if (in.muon) c.all_gather += muon_all_gather_bytes(st.block_elements, zero, ranks);
            return c;
        };
        const StageMemory& b = *std::max_element(stages.begin(), stages.end(), [&](const StageMemory& x, const StageMemory& y) {
            return comm_of(x, in.zero_stage).total() < comm_of(y, in.zero_stage).total();
        });
        auto comm_at = [&](int zero) { return comm_of(b, zero); };
        const CommBytes c = comm_at(in.zero_stage);
        const long bi = &b - stages.data();
        const std::string busiest = by_stage ? " (stage " + std::to_string(bi) + ", the busiest)" : P > 1 ? per : "";
        if (by_stage) rep.add("comm", "stage", static_cast<double>(bi), Unit::none, "the pipeline stage whose ranks these rows are");
        rep.add("comm", "bytes_per_rank_per_step", c.total(), Unit::bytes,
                (in.muon ? "ring: all-reduce 2(n-1)/n, RS/AG (n-1)/n of psi e; Muon's FP32 block units (n-1)/n x 4 bytes"
                         : "ring: all-reduce 2(n-1)/n, RS/AG (n-1)/n of psi e") + busiest);
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
        const double step_tokens = static_cast<double>(in.batch) * T * ranks * std::max(1, in.grad_accum) * M;
        rep.add("steps", "tokens_per_step", step_tokens, Unit::count,
                M > 1 ? "B x T x ranks x grad accumulation x micro-batches" : "B x T x ranks x grad accumulation");
        rep.add("steps", "steps", r.D / step_tokens, Unit::count, "D / tokens per step");
        if (r.D < step_tokens) rep.note("one step's tokens are more than D: the run is not one whole optimizer step");
        rep.add("steps", "flops_per_step", (6 * r.N + r.attention_per_token) * step_tokens, Unit::flops, "(6N + 12LCT) x tokens per step");
    }

    // Pipeline.
    if (in.pipeline_stages > 1) {
        const double bubble = pipeline_bubble(in.pipeline_stages, in.micro_batches);
        rep.add("pipeline", "bubble", bubble, Unit::ratio, "(P - 1) / (M + P - 1)");
        // The time above follows from the MFU, which must already pay for the bubble.
        rep.add("pipeline", "mfu_ceiling", 1 - bubble, Unit::ratio, "1 - bubble: each device idles that share of a step");
        if (in.mfu > 1 - bubble)
            rep.note("--mfu " + given(in.mfu) + " is above what the pipeline leaves (" + num(1 - bubble) +
                     "): the time is too short; more micro-batches shrink the bubble");
        rep.text("pipeline", "schedule", in.gpipe ? "gpipe" : "1f1b",
                 in.gpipe ? "all forwards, then all backwards" : "one forward, one backward once the pipeline is full");
        if (in.model && in.batch > 0) {
            // Point to point between neighbouring stages: the residual stream at the cut.
            const int T = in.seq_len > 0 ? in.seq_len : in.model->max_seq_len;
            const double boundary = static_cast<double>(in.batch) * T * in.model->n_embd * in.dtype_bytes;
            rep.add("pipeline", "p2p_bytes_per_micro_batch", boundary, Unit::bytes,
                    "B x T x C x e: the activations forward, their gradient back");
            rep.add("pipeline", "p2p_bytes_per_step", (P > 2 ? 2.0 : 1.0) * M * std::max(1, in.grad_accum) * boundary, Unit::bytes,
                    P > 2 ? "a middle stage's sends: both ways, M micro-batches x grad accumulation"
                          : "each stage's sends: one way, M micro-batches x grad accumulation");
        }
        if (in.model && in.model->tied_head) {
            // The first stage's wte and the last stage's copy of it as the head must stay one
            // matrix: they sum their gradients each step (an all-reduce of two), the whole [Vp, C]
            // at ZeRO 0-1, each rank's reduced slice at ZeRO 2-3.
            const double head = static_cast<double>(in.model->head_matrix.first) * in.model->head_matrix.second;
            rep.add("pipeline", "tied_head_sum_bytes", head * in.dtype_bytes / (in.zero_stage >= 2 ? ranks : 1), Unit::bytes,
                    "first and last stage, per step: Vp x C x e (ZeRO 2-3: / n) to sum the tied head's gradient");
        }
    }

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
            // sixnd's checkpoint (train/checkpoint.h): rank 0 writes every parameter and each rank
            // its own optimizer file, its ZeRO shard of master, m and v (at stage 0 all of them);
            // rank 0 of the stage that writes most is the last to finish.
            double bytes = 0;
            for (const StageMemory& st : stages)
                bytes = std::max(bytes, in.dtype_bytes * st.units.total + st.states.master + st.states.adam_m + st.states.adam_v);
            write_s = bytes / in.write_bw;
            how = "rank 0's e psi (params) + its ZeRO shard of master, m, v at " + num(in.write_bw) + " B/s per device (assumed)";
        }
        rep.add("reliability", "checkpoint_write_s", write_s, Unit::seconds, how);
        rep.add("reliability", "checkpoint_interval_s", young_daly_interval(write_s, it.mtbf_s), Unit::seconds,
                "Young/Daly: sqrt(2 x write time x MTBF)");
        // Young/Daly's first-order optimum assumes a write far shorter than the time between failures.
        if (write_s >= it.mtbf_s)
            rep.note("a checkpoint write (" + human(write_s, Unit::seconds) + ") is no shorter than the job's MTBF (" +
                     human(it.mtbf_s, Unit::seconds) + "): the Young/Daly interval does not hold, and the run loses its "
                     "progress between interruptions; write faster or use fewer devices");
    }

    // Serving.
    if (dev) {
        const double tps = decode_tokens_per_s(dev->mem_bw, dev->peak_flops, r.N, in.dtype_bytes, in.serve_batch);
        rep.add("serving", "decode_tokens_per_s", tps, Unit::per_second,
                "min(batch x bandwidth / weight bytes, peak / 2N): weights read once per step, 2N FLOPs per token");
        if (in.serve_batch * dev->mem_bw / (in.dtype_bytes * r.N) > dev->peak_flops / (2 * r.N))
            rep.note("--serve-batch " + std::to_string(in.serve_batch) + " is past the ridge point: decoding is compute-bound there");
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
                    const double serve_h = in.serve_tokens / decode_tokens_per_s(dev->mem_bw, dev->peak_flops, n, in.dtype_bytes, in.serve_batch) / 3600;
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
    // The inputs are held to their ranges, but their products can still leave the doubles.
    for (const Row& row : rep.rows())
        if (row.value.is_number() && !std::isfinite(row.value.get<double>()))
            throw Error("plan", row.section + "." + row.key + " is not a finite number: the inputs are too large to plan");
    return rep;
}

}  // namespace sixnd::plan
