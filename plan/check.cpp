#include "plan/check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "core/error.h"
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

// A value as the error shows it: the JSON text, cut short.
std::string shown(const nlohmann::json& v) { return excerpt(v.dump()); }

std::string count(double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", x);
    return b;
}

std::string integer_range(int min, int max) {
    if (max != INT_MAX) return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    if (min == 0) return "a non-negative integer";
    if (min == 1) return "a positive integer";
    return "an integer >= " + std::to_string(min);
}

}  // namespace

LogFields::LogFields(const std::string& path, const LogRecord& r) : LogFields(path + ":" + std::to_string(r.line), "", &r.json) {
    if (!r.json.is_object()) throw Error(where_, "the record is not a JSON object");
}

LogFields::LogFields(std::string where, std::string prefix, const nlohmann::json* j)
    : where_(std::move(where)), prefix_(std::move(prefix)), j_(j) {}

void LogFields::fault(const std::string& key, const std::string& what) const { throw Error(where_, prefix_ + key + " " + what); }

const nlohmann::json& LogFields::at(const std::string& key) const {
    const auto it = j_->find(key);
    if (it == j_->end()) fault(key, "is missing");
    return *it;
}

bool LogFields::has(const std::string& key) const { return j_->contains(key); }

bool LogFields::is_null(const std::string& key) const { return has(key) && at(key).is_null(); }

std::vector<std::string> LogFields::keys() const {
    std::vector<std::string> k;
    for (const auto& item : j_->items()) k.push_back(item.key());
    return k;
}

LogFields LogFields::object(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_object()) fault(key, "must be an object, got " + shown(v));
    return LogFields(where_, prefix_ + key + ".", &v);
}

size_t LogFields::array_size(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_array()) fault(key, "must be an array, got " + shown(v));
    return v.size();
}

LogFields LogFields::element(const std::string& key, size_t i) const {
    const std::string name = key + "[" + std::to_string(i) + "]";
    if (i >= array_size(key)) fault(name, "is missing");
    const nlohmann::json& v = at(key)[i];
    if (!v.is_object()) fault(name, "must be an object, got " + shown(v));
    return LogFields(where_, prefix_ + name + ".", &v);
}

double LogFields::number(const std::string& key, bool positive) const {
    const nlohmann::json& v = at(key);
    const double x = v.is_number() ? v.get<double>() : NAN;
    if (!std::isfinite(x) || x < 0 || (positive && x == 0))
        fault(key, std::string("must be a finite ") + (positive ? "positive" : "non-negative") + " number, got " + shown(v));
    return x;
}

double LogFields::number_or(const std::string& key, double fallback) const { return has(key) ? number(key) : fallback; }

double LogFields::signed_number(const std::string& key) const {
    const nlohmann::json& v = at(key);
    const double x = v.is_number() ? v.get<double>() : NAN;
    if (!std::isfinite(x)) fault(key, "must be a finite number, got " + shown(v));
    return x;
}

int LogFields::integer(const std::string& key, int min, int max) const {
    const nlohmann::json& v = at(key);
    if (v.is_number_integer()) {
        const int64_t x = v.get<int64_t>();
        if (x >= min && x <= max) return static_cast<int>(x);
    }
    fault(key, "must be " + integer_range(min, max) + ", got " + shown(v));
}

int LogFields::integer_or(const std::string& key, int min, int fallback) const { return has(key) ? integer(key, min) : fallback; }

bool LogFields::boolean(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_boolean()) fault(key, "must be true or false, got " + shown(v));
    return v.get<bool>();
}

std::string LogFields::text(const std::string& key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_string()) fault(key, "must be a string, got " + shown(v));
    return v.get<std::string>();
}

std::vector<std::string> LogFields::texts(const std::string& key) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < array_size(key); i++) {
        const nlohmann::json& v = at(key)[i];
        if (!v.is_string()) fault(key + "[" + std::to_string(i) + "]", "must be a string, got " + shown(v));
        out.push_back(v.get<std::string>());
    }
    return out;
}

std::string LogFields::choice(const std::string& key, std::initializer_list<const char*> allowed) const {
    const std::string v = text(key);
    std::string names;
    for (const char* a : allowed) {
        if (v == a) return v;
        names += std::string(names.empty() ? "" : ", ") + a;
    }
    fault(key, "must be one of " + names + "; got " + shown(at(key)));
}

std::string LogFields::choice_or(const std::string& key, std::initializer_list<const char*> allowed, const std::string& fallback) const {
    return has(key) ? choice(key, allowed) : fallback;
}

void check_step_record(const LogFields& step) {
    const auto numbers = [](const LogFields& o) {
        for (const std::string& k : o.keys()) o.number(k);
    };
    const auto objects_of_numbers = [&](const std::string& key) {
        for (size_t i = 0; i < step.array_size(key); i++) numbers(step.element(key, i));
    };
    if (step.has("step")) step.integer("step", 0);
    for (const char* k : {"loss", "lr", "grad_norm", "clip_scale", "tokens", "tokens_per_s", "flops", "mfu", "hfu", "comm_bytes"})
        if (step.has(k)) step.number(k);
    if (step.has("step_ms")) step.number("step_ms", true);  // a step takes time
    for (const char* k : {"val_loss", "val_bpb", "task_acc", "task_acc_norm"})
        if (step.has(k) && !step.is_null(k)) step.number(k);
    if (step.has("memory")) numbers(step.object("memory"));
    if (step.has("memory_ranks")) objects_of_numbers("memory_ranks");
    if (step.has("comm_ranks")) objects_of_numbers("comm_ranks");
}

namespace {

// What an event's field holds; a value the trainer logs as null where it was not finite says so.
enum class Holds { count, positive_count, number, number_or_null, signed_or_null, text, texts };

struct EventField {
    const char* key;
    Holds holds;
    bool required;  // written since run logs carried their layout record, else checked where present
};

struct EventKind {
    const char* name;
    std::vector<EventField> fields;
};

// From train/trainer.cpp's log_->event calls, train/spike_evidence.cpp's trigger_json and
// train/bill.cpp.
const std::vector<EventKind>& event_kinds() {
    using H = Holds;
    static const std::vector<EventKind> kinds = {
        {"eval", {{"val_loss", H::number_or_null, true}, {"val_bpb", H::number_or_null, false},
                  {"batches", H::positive_count, false}, {"comm_bytes", H::number, false}}},
        {"eval_task", {{"task", H::text, true}, {"items", H::count, true}, {"acc", H::number_or_null, true},
                       {"acc_norm", H::number_or_null, true}, {"comm_bytes", H::number, false}}},
        {"checkpoint", {{"dir", H::text, true}}},
        {"spike", {{"loss", H::number_or_null, true}, {"fired_on", H::texts, false}, {"action", H::text, false},
                   {"report", H::text, false}, {"loss_mean", H::number_or_null, false}, {"loss_std", H::number_or_null, false},
                   {"loss_z", H::signed_or_null, false}, {"grad_norm", H::number_or_null, false},
                   {"grad_mean", H::number_or_null, false}, {"grad_std", H::number_or_null, false},
                   {"grad_z", H::signed_or_null, false}, {"window", H::positive_count, false}, {"z_loss", H::number, false},
                   {"z_grad", H::number, false}}},
        {"skip", {{"loss", H::number_or_null, true}, {"grad_norm", H::number_or_null, true}, {"reason", H::text, false},
                  {"consecutive", H::positive_count, false}, {"fired_on", H::texts, false}}},
        {"rollback", {{"from", H::count, true}, {"to", H::count, true}, {"batches_skipped", H::count, true},
                      {"tokens_skipped", H::number, true}, {"source", H::text, true}, {"rollbacks", H::positive_count, true}}},
        {"inject", {{"fault", H::text, true}, {"factor", H::number, false}, {"steps", H::positive_count, false}}},
        {"stop", {{"reason", H::text, true}, {"last_checkpoint", H::text, true}, {"signal", H::positive_count, false}}},
        {"profile", {{"path", H::text, true}, {"mfu", H::number, true}, {"hfu", H::number, true}}},
        {"bill", {{"wall_s", H::number, true}, {"devices", H::positive_count, true}, {"device_hours", H::number, true},
                  {"model_flops", H::number, true}, {"hw_flops", H::number, true}, {"mfu", H::number, true},
                  {"hfu", H::number, true}, {"peak_flops", H::number, true}, {"price_per_device_hour", H::number, false},
                  {"dollars", H::number, false}}},
    };
    return kinds;
}

void check_event_field(const LogFields& ev, const EventField& f) {
    if (!f.required && !ev.has(f.key)) return;
    switch (f.holds) {
        case Holds::count: ev.integer(f.key, 0); break;
        case Holds::positive_count: ev.integer(f.key, 1); break;
        case Holds::number: ev.number(f.key); break;
        case Holds::number_or_null:
            if (!ev.is_null(f.key)) ev.number(f.key);
            break;
        case Holds::signed_or_null:
            if (!ev.is_null(f.key)) ev.signed_number(f.key);
            break;
        case Holds::text: ev.text(f.key); break;
        case Holds::texts: ev.texts(f.key); break;
    }
}

}  // namespace

void check_event_record(const LogFields& ev) {
    const std::string name = ev.text("event");
    ev.integer("step", 0);
    for (const EventKind& kind : event_kinds()) {
        if (name != kind.name) continue;
        try {
            for (const EventField& f : kind.fields) check_event_field(ev, f);
        } catch (const Error& e) {
            throw Error(e.where(), "the " + name + " event's " + e.fault());
        }
    }
}

CheckResult check_run(const std::string& path, const LogRecord& header, const std::vector<LogRecord>& steps, const ModelInfo& m) {
    const LogFields h(path, header);
    if (steps.empty()) throw Error(h.where(), "no step records after this header: the run logged no step");
    CheckResult out;
    const LogFields cfg = h.object("config");
    const int world = h.integer("world_size", 1), stage = h.integer("zero_stage", 0, 3), accum = h.integer("grad_accum_steps", 1);
    const int B = cfg.integer("batch", 1), T = cfg.integer("seq_len", 1, m.max_seq_len);
    const int e = cfg.choice("dtype", {"fp32", "bf16"}) == "fp32" ? 4 : 2;
    const bool master = cfg.boolean("master_weights");
    const Recompute rc = parse_recompute(cfg.choice("recompute", {"none", "selective", "full"}));
    const bool flash = cfg.choice("attention", {"flash", "naive"}) == "flash";
    const double step_tokens = h.number("batch_tokens", true);
    const double micro_tokens = static_cast<double>(B) * T * world * accum;
    if (step_tokens != micro_tokens)
        throw Error(h.where(), "batch_tokens " + count(step_tokens) + " is not config.batch x config.seq_len x world_size x " +
                                   "grad_accum_steps = " + count(micro_tokens));
    const std::string device = h.text("device");
    const double peak = h.number("peak_flops");
    const int eval_every = cfg.integer_or("eval_every", 0, 0);
    const LogFields last(path, steps.back());
    // Every rank's memory record (rank 0's alone in a one-process run), one per rank.
    const bool per_rank = last.has("memory_ranks");
    const size_t n_ranks = per_rank ? last.array_size("memory_ranks") : 1;
    if (per_rank && n_ranks != static_cast<size_t>(world))
        throw Error(last.where(), "memory_ranks has " + std::to_string(n_ranks) + " records for world_size " + std::to_string(world));
    std::vector<LogFields> ranks;
    for (size_t r = 0; r < n_ranks; r++) ranks.push_back(per_rank ? last.element("memory_ranks", r) : last.object("memory"));

    // Memory: every rank's categories (rank 0 only in a one-process run).
    StateBytes s = model_state_bytes(m.layout, stage, world, e, master);
    // Muon's gather and Newton-Schulz buffers; the latter per rank, from the matrices its part
    // of each unit touches (muon_ns_floats), so the workspace can differ between ranks.
    const bool muon = cfg.choice_or("optimizer", {"adamw", "muon"}, "adamw") == "muon";
    auto muon_at = [&](int rank) {
        return muon ? muon_cost(m.layout, stage, world, static_cast<double>(muon_ns_floats(m.muon_units, stage, world, rank)))
                    : MuonCost{};
    };
    const MuonCost mc = muon_at(0);
    const ActivationBytes a = activation_bytes(m.activation_shape(flash), B, T, rc, e);
    const char* zero_f = "ZeRO stage table over the layout's units";
    // The packed GEMM's weight copies (cpu_weight_copy_bytes), where the run's CPU keeps them.
    const bool widened = e == 2 && device == "cpu" && h.has("cpu") && h.object("cpu").has("bf16_matmul") &&
                         h.object("cpu").text("bf16_matmul") == "fp32";
    double copies = 0;
    if (widened) {
        const LogFields cpu = h.object("cpu");
        // Logs without the field: the widths of the builds since AVX-512 kernels got 32 columns.
        const bool avx512 = cpu.has("kernels_compiled_for") && cpu.text("kernels_compiled_for") == "avx512f";
        copies = cpu_weight_copy_bytes(m, stage, cpu.integer_or("gemm_panel_width", 1, avx512 ? 32 : 16));
    }
    for (size_t r = 0; r < ranks.size(); r++) {
        const LogFields& mem = ranks[r];
        const std::string p = ranks.size() > 1 ? "rank" + std::to_string(r) + "." : "";
        const double workspace = s.workspace + muon_at(static_cast<int>(r)).workspace;  // ZeRO scratch + Muon's
        const double params = mem.number("params"), grads = mem.number("grads"), master_b = mem.number("master"),
                     adam_m = mem.number("adam_m"), adam_v = mem.number("adam_v");
        out.rows.push_back({p + "memory.params", s.params, params, Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.grads", s.grads, grads, Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.master", s.master, master_b, Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.adam_m", s.adam_m, adam_m, Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.adam_v", s.adam_v, adam_v, Unit::bytes, zero_f});
        out.rows.push_back({p + "memory.model_states", s.total(), params + grads + master_b + adam_m + adam_v, Unit::bytes,
                            "exact: the layout's padded units"});
        // Each rank's workspace where the log has it (a multi-rank run); else rank 0's, unnamed.
        const bool rank_workspace = ranks.size() > 1 && mem.has("workspace");
        if (r == 0) {
            const LogFields mem0 = last.object("memory");
            out.rows.push_back({"memory.activations", a.activations, mem0.number("activations"), Unit::bytes,
                                "kept tensors at B x T under --recompute"});
            if (!rank_workspace)
                out.rows.push_back({"memory.workspace", a.workspace + workspace, mem0.number("workspace"), Unit::bytes,
                                    muon ? "backward 9 C e per token + ZeRO scratch + Muon's unit and NS buffers"
                                         : "backward 9 C e per token + ZeRO scratch"});
        }
        if (rank_workspace)
            out.rows.push_back({p + "memory.workspace", a.workspace + workspace, mem.number("workspace"), Unit::bytes,
                                muon ? "backward 9 C e per token + ZeRO scratch + this rank's Muon unit and NS buffers"
                                     : "backward 9 C e per token + ZeRO scratch"});
        if (widened)
            out.rows.push_back({p + "memory.weight_copies", copies, mem.number_or("weight_copies", 0), Unit::bytes,
                                stage == 3 ? "2 bytes per element and role of the LM head and of one block per gather slot, N padded to the panel width"
                                           : "2 bytes per Linear and LM-head weight and role, N padded to the panel width (bf16 in FP32 arithmetic on this CPU)"});
        out.rows.push_back({p + "memory.peak", s.total() + workspace + a.activations + a.workspace + copies, mem.number("peak"),
                            Unit::bytes, "states + activations + workspace (+ weight copies)"});
    }

    // Time: the step's FLOPs at the measured MFU (steps after the first, which allocates).
    const double attn = attention_flops_per_token(m.n_layer, m.n_embd, T);
    const double flops = (6 * m.matmul_params + attn) * step_tokens;
    const size_t from = steps.size() > 1 ? 1 : 0;
    std::vector<double> implied, ms;
    for (size_t i = from; i < steps.size(); i++) {
        const LogFields step(path, steps[i]);
        const double mfu = step.number("mfu");
        if (peak > 0 && mfu > 0) implied.push_back(flops / (world * peak * mfu));
        ms.push_back(step.number("step_ms", true));
    }
    out.rows.push_back({"flops_per_step", flops, last.number("flops"), Unit::flops, "(6N + 12 L C T) x tokens per step"});
    // The medians, not means: a mean moves with one step that another process on the cores
    // slowed down. The median of each step's implied time, not the time at the median MFU: over
    // an even count a median averages the middle two, and the time at the mean of two MFUs is
    // not the mean of their times, so a log that agrees with itself would read off 1.
    if (!implied.empty())
        out.rows.push_back({"step_time_s", median(implied), median(ms) / 1e3, Unit::seconds,
                            "FLOPs / (ranks x peak x measured MFU), median step; measured: median step"});

    // Bytes sent per rank per step.
    CommBytes c = comm_bytes_per_step(m.layout, stage, world, e, accum);
    c.all_gather += mc.all_gather;
    if (last.has("comm_ranks")) {
        const size_t n = last.array_size("comm_ranks");
        if (n != static_cast<size_t>(world))
            throw Error(last.where(), "comm_ranks has " + std::to_string(n) + " records for world_size " + std::to_string(world));
        for (size_t r = 0; r < n; r++) {
            const LogFields cr = last.element("comm_ranks", r);
            const std::string p = "rank" + std::to_string(r) + ".comm.";
            const double ar = cr.number_or("all_reduce", 0), rs = cr.number_or("reduce_scatter", 0), ag = cr.number_or("all_gather", 0);
            out.rows.push_back({p + "all_reduce", c.all_reduce, ar, Unit::bytes, "2(n-1)/n psi e on the last micro-step"});
            out.rows.push_back({p + "reduce_scatter", c.reduce_scatter, rs, Unit::bytes, "(n-1)/n psi e per reducing micro-step"});
            out.rows.push_back({p + "all_gather", c.all_gather, ag, Unit::bytes, "(n-1)/n of the gathered units"});
            out.rows.push_back({p + "total", c.total(), ar + rs + ag, Unit::bytes, "bytes sent per rank per step"});
        }
    } else if (world == 1) {
        out.rows.push_back({"comm.bytes_per_rank_per_step", c.total(), last.number("comm_bytes"), Unit::bytes, "one process: none"});
    } else {
        // A log without the per-rank records (written by hand, or cut down) still has the bytes
        // rank 0 sent.
        out.rows.push_back({"rank0.comm.total", c.total(), last.number("comm_bytes"), Unit::bytes,
                            "bytes sent per rank per step (no comm_ranks in the log: rank 0's comm_bytes)"});
    }
    if (stage == 3 && eval_every > 0)
        out.notes.push_back("stage 3 with evaluation: an evaluation's gathers are in its eval event's comm_bytes, and it leaves units in the gather slots, so the next step gathers less");
    return out;
}

}  // namespace sixnd::plan
