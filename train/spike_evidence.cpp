#include "train/spike_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/json_fault.h"

namespace sixnd {

using nlohmann::json;

namespace {

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json windows_json(const std::vector<RollingWindow>& ws) {
    json a = json::array();
    for (const auto& w : ws) a.push_back(w.to_json());
    return a;
}

void windows_from_json(std::vector<RollingWindow>& ws, const json& j, const std::string& where) {
    if (!j.is_array()) throw Error(where, "a list of spike-history windows is not an array");
    // Another model (a resume that changed it) keeps none of the old per-unit history.
    if (j.size() != ws.size()) return;
    for (size_t i = 0; i < ws.size(); i++) ws[i].from_json(j[i], where);
}

}  // namespace

SpikeHistory::SpikeHistory(const SpikeThresholds& t, int units, int layers)
    : detector(t),
      unit_grad(static_cast<size_t>(units), RollingWindow(static_cast<size_t>(t.window))),
      attention(static_cast<size_t>(layers), RollingWindow(static_cast<size_t>(t.window))),
      lr(static_cast<size_t>(t.window)) {}

void SpikeHistory::accept(double loss, double grad_norm, const std::vector<double>& unit_norms,
                          const std::vector<float>& attention_max) {
    detector.accept(loss, grad_norm);
    for (size_t u = 0; u < unit_grad.size() && u < unit_norms.size(); u++) unit_grad[u].push(unit_norms[u]);
    for (size_t l = 0; l < attention.size() && l < attention_max.size(); l++) attention[l].push(attention_max[l]);
}

void SpikeHistory::applied(double rate, double scheduled_rate, bool injected) {
    lr.push(rate);
    last_lr = rate;
    last_scheduled_lr = scheduled_rate;
    last_injected = injected;
}

json SpikeHistory::to_json() const {
    return json{{"detector", detector.to_json()},
                {"unit_grad", windows_json(unit_grad)},
                {"attention", windows_json(attention)},
                {"lr", lr.to_json()},
                {"last_lr", last_lr},
                {"last_scheduled_lr", last_scheduled_lr},
                {"last_injected", last_injected}};
}

void SpikeHistory::from_json(const json& j, const std::string& where) {
    try {
        detector.from_json(j.at("detector"), where);
        windows_from_json(unit_grad, j.at("unit_grad"), where);
        windows_from_json(attention, j.at("attention"), where);
        lr.from_json(j.at("lr"), where);
        last_lr = j.at("last_lr");
        last_scheduled_lr = j.at("last_scheduled_lr");
        last_injected = j.at("last_injected");
    } catch (const json::exception& e) {
        throw Error(where, "spike history: missing or mistyped field: " + json_fault(e));
    }
}

std::string spike_state_text(const SpikeHistory& h, const SpikeRunState& r) {
    json j{{"format", "sixnd-spikes"},
           {"version", 1},
           {"history", h.to_json()},
           {"run", {{"lr_fired", r.lr_fired}, {"lr_left", r.lr_left}, {"junk_fired", r.junk_fired}, {"rollbacks", r.rollbacks}}}};
    return j.dump() + "\n";
}

void parse_spike_state(const std::string& text, const std::string& where, SpikeHistory& h, SpikeRunState& r) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw Error(where, "malformed JSON: " + json_fault(e));
    }
    if (!j.is_object() || j.value("format", "") != "sixnd-spikes" || j.value("version", 0) != 1)
        throw Error(where, "not a sixnd spike state, version 1");
    try {
        h.from_json(j.at("history"), where);
        const json& run = j.at("run");
        r.lr_fired = run.at("lr_fired");
        r.lr_left = run.at("lr_left");
        r.junk_fired = run.at("junk_fired");
        r.rollbacks = run.at("rollbacks");
    } catch (const json::exception& e) {
        throw Error(where, "missing or mistyped field: " + json_fault(e));
    }
    if (r.lr_left < 0 || r.rollbacks < 0) throw Error(where, "a counter is negative");
}

json trigger_json(const SpikeVerdict& v, const SpikeThresholds& t) {
    return json{{"fired_on", v.fired_on()},
                {"loss", v.loss.value},
                {"loss_mean", v.loss.mean},
                {"loss_std", v.loss.std},
                {"loss_z", v.loss.z},
                {"grad_norm", v.grad.value},
                {"grad_mean", v.grad.mean},
                {"grad_std", v.grad.std},
                {"grad_z", v.grad.z},
                {"window", t.window},
                {"z_loss", t.z_loss},
                {"z_grad", t.z_grad}};
}

json learning_rate_json(const LrFacts& f, const SpikeHistory& h) {
    // After warm-up: decaying once the schedule's rate is below the peak (wsd's stable part,
    // like constant, is "constant").
    const char* phase = f.step <= f.warmup ? "warmup" : f.scheduled_lr < f.base_lr * (1 - 1e-6) ? "decay" : "constant";
    // The rate at this step, or of the update just before it, whichever stood further above
    // its schedule: an update's effect shows in the loss of the step after it.
    double ratio = f.scheduled_lr > 0 ? f.lr / f.scheduled_lr : 1;
    if (h.last_scheduled_lr > 0) ratio = std::max(ratio, h.last_lr / h.last_scheduled_lr);
    return json{{"lr", f.lr},
                {"scheduled_lr", f.scheduled_lr},
                {"base_lr", f.base_lr},
                {"schedule", f.schedule},
                {"warmup", f.warmup},
                {"phase", phase},
                {"fraction_of_schedule", static_cast<double>(f.step) / f.steps},
                {"recent_mean_lr", h.lr.size() ? json(h.lr.mean()) : json(nullptr)},
                {"recent_max_lr", h.lr.size() ? json(h.lr.max()) : json(nullptr)},
                {"last_update_lr", h.last_lr >= 0 ? json(h.last_lr) : json(nullptr)},
                {"lr_ratio", ratio},
                {"injected", f.injected}};
}

json attention_json(const std::vector<float>& now, const SpikeHistory& h) {
    if (now.empty() || now.size() != h.attention.size()) return nullptr;
    json maxes = json::array(), means = json::array();
    double ratio = 0;
    bool have_mean = false;
    for (size_t l = 0; l < now.size(); l++) {
        maxes.push_back(now[l]);
        if (h.attention[l].size() == 0) {
            means.push_back(nullptr);
            continue;
        }
        const double m = h.attention[l].mean();
        means.push_back(m);
        if (m > 0) {
            ratio = have_mean ? std::max(ratio, now[l] / m) : now[l] / m;
            have_mean = true;
        }
    }
    return json{{"max_per_layer", maxes}, {"mean_per_layer", means}, {"max_ratio", have_mean ? json(ratio) : json(nullptr)}};
}

std::vector<double> unit_update_partials(const ParamLayout& layout, const std::vector<ShardSpan>& spans,
                                         const std::vector<float>& v, const std::vector<float>& w_before,
                                         const std::vector<float>& w_after) {
    const size_t U = layout.units().size();
    std::vector<double> p(4 * U);
    for (size_t u = 0; u < U; u++) {
        p[4 * u] = std::numeric_limits<double>::infinity();
        p[4 * u + 1] = -1;
    }
    for (const ShardSpan& s : spans) {
        const UnitInfo& unit = layout.units()[static_cast<size_t>(s.unit)];
        // Only the elements of the span that hold parameters (the unit's padding is never updated).
        const size_t used_end = unit.begin + unit.used;
        const size_t end = std::min(s.flat_begin + s.count, used_end);
        double* q = &p[4 * static_cast<size_t>(s.unit)];
        for (size_t f = s.flat_begin; f < end; f++) {
            const size_t i = s.local + (f - s.flat_begin);
            const double vi = v[i];
            if (vi > 0) q[0] = std::min(q[0], vi);
            q[1] = std::max(q[1], vi);
            const double d = static_cast<double>(w_after[i]) - w_before[i];
            q[2] += d * d;
            q[3] += static_cast<double>(w_before[i]) * w_before[i];
        }
    }
    return p;
}

json units_json(const ParamLayout& layout, const std::vector<double>& unit_norms, const SpikeHistory& h,
                const std::vector<double>& gathered, int world) {
    const size_t U = layout.units().size();
    json out = json::array();
    for (size_t u = 0; u < U; u++) {
        double vmin = std::numeric_limits<double>::infinity(), vmax = -1, dd = 0, ww = 0;
        for (int r = 0; r < world; r++) {
            const double* q = &gathered[static_cast<size_t>(r) * 4 * U + 4 * u];
            vmin = std::min(vmin, q[0]);
            vmax = std::max(vmax, q[1]);
            dd += q[2];
            ww += q[3];
        }
        const double g = u < unit_norms.size() ? unit_norms[u] : 0;
        const RollingWindow& w = h.unit_grad[u];
        const double mean = w.size() ? w.mean() : std::numeric_limits<double>::quiet_NaN();
        out.push_back({{"unit", layout.units()[u].name},
                       {"grad_norm", g},
                       {"grad_norm_mean", finite_or_null(mean)},
                       {"grad_ratio", mean > 0 ? finite_or_null(g / mean) : json(nullptr)},
                       {"adam_v_min", finite_or_null(vmin)},
                       {"adam_v_max", vmax >= 0 ? json(vmax) : json(nullptr)},
                       {"update_ratio", ww > 0 ? finite_or_null(std::sqrt(dd / ww)) : json(nullptr)}});
    }
    return out;
}

json batch_json(int seq_len, const std::vector<RowEvidence>& rows, double loss, const SpikeHistory& h, bool injected_junk) {
    json a = json::array();
    double worst = 0;
    for (const RowEvidence& r : rows) {
        json row{{"rank", r.rank}, {"micro", r.micro}, {"row", r.row}, {"shard", r.shard},
                 {"offset", r.offset}, {"loss", r.loss}, {"max_token_loss", r.max_token_loss}};
        if (!r.replaced.is_null()) row["replaced"] = r.replaced;
        a.push_back(row);
        worst = std::max(worst, r.max_token_loss);
    }
    const RollingWindow& w = h.detector.losses();
    return json{{"seq_len", seq_len},
                {"rows", a},
                {"loss", loss},
                {"recent_loss_mean", w.size() ? json(w.mean()) : json(nullptr)},
                {"per_token_loss_max", worst},
                {"injected_junk", injected_junk}};
}

std::string spike_report_path(const std::string& out_dir, int step, int rollbacks) {
    char name[48];
    if (rollbacks > 0) std::snprintf(name, sizeof name, "step-%07d-r%d.json", step, rollbacks);
    else std::snprintf(name, sizeof name, "step-%07d.json", step);
    return out_dir + "/spikes/" + name;
}

}  // namespace sixnd
