#include "plan/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/zero_slots.h"
#include "plan/scaling.h"

namespace sixnd::plan {

double CheckRow::ratio() const {
    if (predicted == 0 && measured == 0) return 1;
    return measured == 0 ? INFINITY : predicted / measured;
}

const CheckRow& CheckResult::find(const std::string& q) const {
    for (const auto& r : rows)
        if (r.quantity == q) return r;
    throw Error("plan --check", "no row " + q);
}

nlohmann::json CheckResult::to_json() const {
    nlohmann::json rs = nlohmann::json::array();
    for (const auto& r : rows) {
        const double q = r.ratio();
        rs.push_back({{"quantity", r.quantity}, {"predicted", r.predicted}, {"measured", r.measured},
                      {"ratio", std::isfinite(q) ? nlohmann::json(q) : nlohmann::json(nullptr)}, {"formula", r.formula}});
    }
    return {{"rows", rs}, {"notes", notes}};
}

std::string CheckResult::to_table() const {
    char line[512];
    std::snprintf(line, sizeof line, "%-30s %16s %16s %8s  %s\n", "quantity", "predicted", "measured", "ratio", "formula");
    std::string out = line;
    for (const auto& r : rows) {
        std::snprintf(line, sizeof line, "%-30s %16s %16s %8.4f  %s\n", r.quantity.c_str(), human(r.predicted, r.unit).c_str(),
                      human(r.measured, r.unit).c_str(), r.ratio(), r.formula.c_str());
        out += line;
    }
    for (const auto& n : notes) out += "note: " + n + "\n";
    return out;
}

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

CheckResult check_run(const nlohmann::json& h, const std::vector<nlohmann::json>& steps, const ModelInfo& m) {
    if (steps.empty()) throw Error("plan --check", "the run log has no step records");
    CheckResult out;
    const nlohmann::json& cfg = h.at("config");
    const int world = h.at("world_size"), stage = h.at("zero_stage"), accum = h.at("grad_accum_steps");
    const int B = cfg.at("batch"), T = cfg.at("seq_len");
    const int e = cfg.at("dtype").get<std::string>() == "fp32" ? 4 : 2;
    const bool master = cfg.at("master_weights");
    const Recompute rc = parse_recompute(cfg.at("recompute"));
    const bool flash = cfg.at("attention").get<std::string>() == "flash";
    const double step_tokens = h.at("batch_tokens");
    const nlohmann::json& last = steps.back();

    // Memory: every rank's categories (rank 0 only in a one-process run).
    StateBytes s = model_state_bytes(m.layout, stage, world, e, master);
    // Muon's gather and Newton-Schulz buffers; its widest matrix is taken as GPT-2's MLP [4C, C].
    const bool muon = cfg.value("optimizer", "adamw") == "muon";
    const MuonCost mc = muon ? muon_cost(m.layout, stage, world, 6.0 * m.n_embd * m.n_embd) : MuonCost{};
    s.workspace += mc.workspace;
    const ActivationBytes a = activation_bytes(m.activation_shape(flash), B, T, rc, e);
    const nlohmann::json ranks = last.contains("memory_ranks") ? last.at("memory_ranks") : nlohmann::json::array({last.at("memory")});
    const char* zero_f = "ZeRO stage table over the layout's units";
    // A CPU without BF16 dot products runs bf16 matmuls on the packed GEMM, which keeps packed
    // bf16 panels of each Linear weight and of the LM head in each of its two roles
    // (model/cpu/weight_copies.h): 2 bytes per element and role, the role's N (rows as W^T,
    // columns as W) padded to the panel width the kernels were built with. The copies are kept
    // per weight address: under ZeRO-3 the blocks' weights are gathered into kZero3UnitSlots
    // reused slots (core/zero_slots.h), so a rank keeps one block's copies per slot that ever
    // holds a block (all of them with as many blocks; with one block, the final layernorm takes
    // the other slot), and the head's in the embeddings slot.
    const bool widened = e == 2 && h.at("device") == "cpu" && h.contains("cpu") && h.at("cpu").value("bf16_matmul", "") == "fp32";
    double copies = 0;
    if (widened) {
        const nlohmann::json& cpu = h.at("cpu");
        // Logs without the field: the widths of the builds since AVX-512 kernels got 32 columns.
        const int width = cpu.value("gemm_panel_width", cpu.value("kernels_compiled_for", "") == "avx512f" ? 32 : 16);
        const auto padded = [width](double n) { return std::ceil(n / width) * width; };
        const auto both_roles = [&padded](std::pair<int, int> w) {
            return 2.0 * (w.first * padded(w.second) + w.second * padded(w.first));
        };
        double block = 0;
        for (const auto& w : m.block_matrices) block += both_roles(w);
        const int block_copies = stage == 3 ? std::min(m.n_layer, kZero3UnitSlots) : m.n_layer;
        copies = both_roles(m.head_matrix) + block_copies * block;
    }
    for (size_t r = 0; r < ranks.size(); r++) {
        const nlohmann::json& mem = ranks[r];
        const std::string p = ranks.size() > 1 ? "rank" + std::to_string(r) + "." : "";
        out.rows.push_back({p + "memory.params", s.params, mem.at("params"), Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.grads", s.grads, mem.at("grads"), Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.master", s.master, mem.at("master"), Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.adam_m", s.adam_m, mem.at("adam_m"), Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.adam_v", s.adam_v, mem.at("adam_v"), Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.model_states", s.total(),
                            mem.at("params").get<double>() + mem.at("grads").get<double>() + mem.at("master").get<double>() +
                                mem.at("adam_m").get<double>() + mem.at("adam_v").get<double>(),
                            Unit::bytes, "exact: the layout's padded units"});
        if (r == 0) {
            out.rows.push_back({"memory.activations", a.activations, last.at("memory").at("activations"), Unit::bytes,
                                "kept tensors at B x T under --recompute"});
            out.rows.push_back({"memory.workspace", a.workspace + s.workspace, last.at("memory").at("workspace"), Unit::bytes,
                                muon ? "backward 9 C e per token + ZeRO scratch + Muon's unit and NS buffers"
                                     : "backward 9 C e per token + ZeRO scratch"});
        }
        if (widened)
            out.rows.push_back({p + "memory.weight_copies", copies, mem.value("weight_copies", 0.0), Unit::bytes,
                                stage == 3 ? "2 bytes per element and role of the LM head and of one block per gather slot, N padded to the panel width"
                                           : "2 bytes per Linear and LM-head weight and role, N padded to the panel width (bf16 in FP32 arithmetic on this CPU)"});
        out.rows.push_back({p + "memory.peak", s.total() + s.workspace + a.activations + a.workspace + copies, mem.at("peak"),
                            Unit::bytes, "states + activations + workspace (+ weight copies)"});
    }

    // Time: the step's FLOPs at the measured MFU (steps after the first, which allocates).
    const size_t from = steps.size() > 1 ? 1 : 0;
    std::vector<double> mfu, ms;
    for (size_t i = from; i < steps.size(); i++) {
        mfu.push_back(steps[i].at("mfu"));
        ms.push_back(steps[i].at("step_ms"));
    }
    // The median, as for the measured step: a mean over a few steps moves with one step that
    // another process on the cores slowed down, and then no longer matches the median step.
    const double mid_mfu = mfu.empty() ? 0 : median(mfu);
    const double peak = h.at("peak_flops");
    const double attn = attention_flops_per_token(m.n_layer, m.n_embd, T);
    const double flops = (6 * m.matmul_params + attn) * step_tokens;
    out.rows.push_back({"flops_per_step", flops, last.at("flops"), Unit::flops, "(6N + 12 L C T) x tokens per step"});
    if (peak > 0 && mid_mfu > 0)
        out.rows.push_back({"step_time_s", flops / (world * peak * mid_mfu), median(ms) / 1e3, Unit::seconds,
                            "FLOPs / (ranks x peak x median measured MFU); measured: median step"});

    // Bytes sent per rank per step.
    CommBytes c = comm_bytes_per_step(m.layout, stage, world, e, accum);
    c.all_gather += mc.all_gather;
    if (last.contains("comm_ranks")) {
        const nlohmann::json& cr = last.at("comm_ranks");
        for (size_t r = 0; r < cr.size(); r++) {
            const std::string p = "rank" + std::to_string(r) + ".comm.";
            const double ar = cr[r].value("all_reduce", 0.0), rs = cr[r].value("reduce_scatter", 0.0), ag = cr[r].value("all_gather", 0.0);
            out.rows.push_back({p + "all_reduce", c.all_reduce, ar, Unit::bytes, "2(n-1)/n psi e on the last micro-step"});
            out.rows.push_back({p + "reduce_scatter", c.reduce_scatter, rs, Unit::bytes, "(n-1)/n psi e per reducing micro-step"});
            out.rows.push_back({p + "all_gather", c.all_gather, ag, Unit::bytes, "(n-1)/n of the gathered units"});
            out.rows.push_back({p + "total", c.total(), ar + rs + ag, Unit::bytes, "bytes sent per rank per step"});
        }
    } else {
        out.rows.push_back({"comm.bytes_per_rank_per_step", c.total(), last.at("comm_bytes"), Unit::bytes, "one process: none"});
    }
    if (h.at("peak_source").get<std::string>().find("measured") != std::string::npos)
        out.notes.push_back("the peak was measured at start-up; its matmul buffers may set the ledger's peak before activations exist");
    if (stage == 3 && cfg.value("eval_every", 0) > 0)
        out.notes.push_back("stage 3 with evaluation: an evaluation leaves units in the gather slots, so the next step gathers less");
    return out;
}

}  // namespace sixnd::plan
