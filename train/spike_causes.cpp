#include "train/spike_causes.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "core/shortest_number.h"

namespace sixnd {

using nlohmann::json;

namespace {

// A report field, or null when the parent is not an object or the field is missing or null.
const json* field(const json& j, const char* key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> num(const json& j, const char* key) {
    const json* f = field(j, key);
    if (!f || !f->is_number()) return std::nullopt;
    const double v = f->get<double>();
    if (!std::isfinite(v)) return std::nullopt;
    return v;
}

std::optional<bool> boolean(const json& j, const char* key) {
    const json* f = field(j, key);
    if (!f || !f->is_boolean()) return std::nullopt;
    return f->get<bool>();
}

std::optional<std::string> text(const json& j, const char* key) {
    const json* f = field(j, key);
    if (!f || !f->is_string()) return std::nullopt;
    return f->get<std::string>();
}

double clamp01(double x) { return std::isfinite(x) ? std::min(1.0, std::max(0.0, x)) : 0.0; }

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
    std::string s;
    for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
    return s;
}

// A word the shell passes on unchanged: plain, or in single quotes (a glob pattern must reach
// sixnd unexpanded).
std::string quote(const std::string& s) {
    const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string("_./:=@%+,-").find(c) != std::string::npos;
    });
    if (plain) return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// A number as a command line carries it: a float option's as the float it is (0.003, not
// 0.0030000000260770321), a double one's (the spike thresholds) whole: --spike-z-loss
// 6.0000001 read as a float is 6.
std::string number(const json& v) {
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    const double d = v.get<double>();
    // Past the float range the cast is undefined: such a value is no float option's.
    const bool as_float = std::fabs(d) <= FLT_MAX && static_cast<double>(static_cast<float>(d)) == d;
    return shortest_number(d, as_float);
}

// " --FLAG VALUE" for an option as TrainOptions::to_json or GPTConfig::to_json names it.
std::string flag(const std::string& key, const json& v) {
    std::string f = key;
    std::replace(f.begin(), f.end(), '_', '-');
    const std::string value = v.is_boolean()  ? (v.get<bool>() ? "on" : "off")
                              : v.is_number() ? number(v)
                              : v.is_string() ? quote(v.get<std::string>())
                                              : quote(v.dump());
    return " --" + f + " " + value;
}

// The resolved training options (TrainOptions::to_json) and the model (GPTConfig::to_json) of
// the run, as the trainer records them in the report's run object; null where it does not.
std::pair<json, json> run_config(const json& run) {
    const json* config = field(run, "config");
    const json* model = field(run, "model");
    if (config && model && config->is_object() && model->is_object()) return {*config, *model};
    return {};
}

// The `sixnd train` flags of the resolved options, but for those that name the run's own
// output (its samples too) or inject faults (a diagnostic run asks what the run does without
// them) and --stop-at (it runs to --steps); `changed` replaces the run's values. Options empty
// or 0 there mean "none" or "the default".
std::string train_flags(const json& config, const json& changed) {
    static const std::set<std::string> skip = {"out", "overwrite", "allow_resume_changes", "stop_at", "inject_lr_spike",
                                               "inject_junk_batch", "profile", "price_per_device_hour",
                                               "sample_every", "sample_tokens"};
    static const std::set<std::string> optional = {"total_batch_tokens", "val_data", "tokenizer", "eval_task"};
    std::string flags;
    for (const auto& [key, v] : config.items()) {
        if (skip.count(key) || changed.contains(key) || v.is_null()) continue;
        if (optional.count(key) && (v == "" || v == 0)) continue;
        flags += flag(key, v);
    }
    for (const auto& [key, v] : changed.items()) flags += flag(key, v);
    return flags;
}

// --init random and every shape knob of the model, so that the preset (--model) decides
// nothing; `changed` replaces the run's values.
std::string model_flags(const json& model, const json& changed) {
    std::string flags = " --init random";
    for (const auto& [key, v] : model.items()) {
        const bool unused = key == "padded_vocab_size" || (key == "rope_theta" && model.value("pos", "") != "rope");
        if (!unused && !changed.contains(key)) flags += flag(key, v);
    }
    for (const auto& [key, v] : changed.items()) flags += flag(key, v);
    return flags;
}

// What the `next` commands need from the report's "run" object and the run's configuration;
// placeholders where neither says.
struct RunFacts {
    std::string out = "<OUT>", data = "<TRAIN_DATA>", before = "<CHECKPOINT_BEFORE_THE_SPIKE>", earlier, report,
                device, launcher;
    json config, model;  // null when unknown
    explicit RunFacts(const json& report) {
        const json* run = field(report, "run");
        const json r = run ? *run : json::object();
        if (auto v = text(r, "out")) out = quote(*v);
        if (auto v = text(r, "train_data")) data = quote(*v);
        if (auto v = text(r, "checkpoint_before")) before = quote(*v);
        if (auto v = text(r, "checkpoint_earlier")) earlier = quote(*v);
        const auto step = num(report, "step");
        const auto o = text(r, "out");
        if (auto path = text(r, "report")) this->report = quote(*path);
        else if (step && o) this->report = quote(*o + fmt("/spikes/step-%07lld.json", static_cast<long long>(*step)));
        else this->report = "<OUT>/spikes/step-NNNNNNN.json";
        // Every rank resumes its own shard of the state: the diagnostic runs as many.
        if (auto w = num(r, "world"); w && *w > 1) launcher = fmt("mpirun -np %lld ", static_cast<long long>(*w));
        std::tie(config, model) = run_config(r);
        if (auto v = text(r, "device")) device = *v;
        else if (config.is_object()) device = config.value("device", "");
    }
    std::string replay() const {
        return "sixnd replay --checkpoint " + before + " --spike-report " + report + " --train-data " + data +
               (earlier.empty() ? "" : " --earlier-checkpoint " + earlier);
    }
    std::string flags(const json& changed) const {
        if (!config.is_object()) return " --train-data " + data + " <THE RUN'S OTHER FLAGS>" + train_flags(json::object(), changed);
        return train_flags(config, changed);
    }
    // The run resumed from the checkpoint before the spike (which brings the model) with some
    // options changed, into OUT-<suffix>.
    std::string resume(const json& changed, const std::string& suffix) const {
        return launcher + "sixnd train --resume " + before + flags(changed) + " --out " + out + "-" + suffix;
    }
    // The run again from the start, its model with some knobs changed, into OUT-<suffix>.
    std::string fresh(const json& model_changed, const std::string& suffix) const {
        const std::string shape = model.is_object() ? model_flags(model, model_changed)
                                                    : " <THE RUN'S MODEL FLAGS>" + train_flags(json::object(), model_changed);
        return launcher + "sixnd train" + shape + flags(json::object()) + " --out " + out + "-" + suffix;
    }
};

struct Cause {
    explicit Cause(const char* n) : name(n) {}
    const char* name;
    double score = 0;
    std::string evidence;
    std::string next;
};

const char* kNotMeasured = "not measured";

Cause learning_rate(const json& report, const RunFacts& run) {
    Cause c{"learning_rate"};
    const json* lr = field(report, "learning_rate");
    const json l = lr ? *lr : json::object();
    std::vector<std::string> ev;
    double s = 0, bonus = 0;
    const auto now = num(l, "lr"), sched = num(l, "scheduled_lr"), mean = num(l, "recent_mean_lr");
    if (auto inj = boolean(l, "injected")) {
        if (*inj) s = 1;
        ev.push_back(*inj ? "LR spike injected" : "not injected");
    }
    if (now && sched && *sched > 0) {
        s = std::max(s, clamp01(*now / *sched - 1));
        ev.push_back(fmt("lr %.3g = %.3gx the schedule's %.3g", *now, *now / *sched, *sched));
    }
    if (now && mean && *mean > 0) {
        s = std::max(s, 0.8 * clamp01((*now / *mean - 1.5) / 2.5));
        ev.push_back(fmt("%.3gx the window's mean lr %.3g", *now / *mean, *mean));
    }
    const auto warmup = num(l, "warmup"), step = num(report, "step");
    if (warmup && step && *warmup > 0) {
        const bool peak = std::fabs(*step - *warmup) <= 0.2 * *warmup;
        if (peak) bonus = 0.2;
        ev.push_back(fmt("step %.0f %s the warm-up's end (%.0f)", *step, peak ? "near" : "not near", *warmup));
    }
    if (auto phase = text(l, "phase")) ev.push_back("phase " + *phase);
    if (auto frac = num(l, "fraction_of_schedule")) ev.push_back(fmt("%.0f%% through the schedule", 100 * *frac));
    if (ev.empty()) {
        c.evidence = kNotMeasured;
    } else {
        c.score = std::min(1.0, s + bonus);
        c.evidence = join(ev, "; ");
    }
    const auto base = num(l, "base_lr");
    const json new_lr = base ? json(*base / 2) : json("<LR/2>");
    const json new_warmup = warmup ? json(2 * static_cast<long long>(*warmup)) : json("<2*WARMUP>");
    c.next = run.resume({{"lr", new_lr}, {"warmup", new_warmup}}, "lr-half");
    return c;
}

Cause attention_logits(const json& report, const RunFacts& run) {
    Cause c{"attention_logits"};
    const json* a = field(report, "attention_logits");
    const json at = a ? *a : json::object();
    std::vector<std::string> ev;
    double s = 0;
    if (auto ratio = num(at, "max_ratio")) {
        s += 0.8 * clamp01((*ratio - 1.2) / 1.8);
        ev.push_back(fmt("max logit %.3gx its running mean", *ratio));
    }
    if (const json* layers = field(at, "max_per_layer"); layers && layers->is_array()) {
        int best = -1;
        double top = 0;
        for (size_t i = 0; i < layers->size(); i++) {
            const json& v = (*layers)[i];
            if (!v.is_number() || !std::isfinite(v.get<double>())) continue;
            if (best < 0 || v.get<double>() > top) best = static_cast<int>(i), top = v.get<double>();
        }
        if (best >= 0) {
            s += 0.2 * clamp01((top - 30) / 70);
            ev.push_back(fmt("largest max logit %.4g (layer %d)", top, best));
        }
    }
    c.score = ev.empty() ? 0 : clamp01(s);
    c.evidence = ev.empty() ? kNotMeasured : join(ev, "; ");
    c.next = run.fresh({{"qk_norm", true}}, "qk-norm");
    return c;
}

Cause data_state(const json& report, const RunFacts& run) {
    Cause c{"data_state"};
    const json* b = field(report, "batch");
    const json batch = b ? *b : json::object();
    std::vector<std::string> ev;
    double s = 0;
    std::vector<double> rows;
    const json* worst_row = nullptr;
    double worst = 0;
    if (const json* r = field(batch, "rows"); r && r->is_array())
        for (const json& row : *r)
            if (auto l = num(row, "loss")) {
                if (!worst_row || *l > worst) worst_row = &row, worst = *l;
                rows.push_back(*l);
            }
    auto loss = num(batch, "loss");
    if (!loss && !rows.empty()) {
        double sum = 0;
        for (double l : rows) sum += l;
        loss = sum / static_cast<double>(rows.size());
    }
    auto recent = num(batch, "recent_loss_mean");
    if (const json* t = field(report, "trigger"); !recent && t) recent = num(*t, "loss_mean");
    const bool junk = boolean(batch, "injected_junk").value_or(false);
    if (junk) ev.push_back("junk batch injected");
    if (loss && recent && *recent > 0) {
        const double q = *loss / *recent;
        s = 0.8 * clamp01((q - 1) / 1.5);
        ev.push_back(fmt("batch loss %.4g = %.3gx the recent mean %.4g", *loss, q, *recent));
        if (rows.size() >= 2) {
            std::vector<double> excess;
            for (double l : rows) excess.push_back(std::max(0.0, l - *recent));
            std::sort(excess.rbegin(), excess.rend());
            double total = 0;
            for (double e : excess) total += e;
            const size_t k = std::max<size_t>(1, rows.size() / 4);
            if (total > 0) {
                double top = 0;
                for (size_t i = 0; i < k; i++) top += excess[i];
                const double even = static_cast<double>(k) / static_cast<double>(rows.size());
                const double conc = clamp01((top / total - even) / (1 - even));
                s += 0.2 * conc * clamp01((q - 1) / 0.5);
                ev.push_back(fmt("the top %zu of %zu rows carry %.0f%% of the excess", k, rows.size(), 100 * top / total));
            }
        }
    }
    if (worst_row) {
        const auto shard = text(*worst_row, "shard");
        const auto off = num(*worst_row, "offset");
        ev.push_back(fmt("worst row %s@%lld loss %.4g", shard ? shard->c_str() : "?", off ? static_cast<long long>(*off) : -1LL,
                         worst));
    }
    if (auto m = num(batch, "per_token_loss_max")) ev.push_back(fmt("worst token loss %.4g", *m));
    if (junk) s = 1;
    c.score = ev.empty() ? 0 : clamp01(s);
    c.evidence = ev.empty() ? kNotMeasured : join(ev, "; ");
    c.next = run.replay();
    return c;
}

Cause optimizer_state(const json& report, const RunFacts& run) {
    Cause c{"optimizer_state"};
    const json* u = field(report, "units");
    double best = -1;
    std::string ev;
    if (u && u->is_array())
        for (const json& unit : *u) {
            const auto v = num(unit, "adam_v_min"), ur = num(unit, "update_ratio"), g = num(unit, "grad_ratio");
            if (!v || !ur || !g) continue;
            const double sv = *v <= 0 ? 1 : clamp01((-std::log10(*v) - 12) / 6);
            const double su = *ur <= 0 ? 0 : clamp01((std::log10(*ur) + 3) / 2);
            const double sg = clamp01((*g - 1) / 3);
            const double s = std::min({sv, su, sg});
            if (s > best) {
                best = s;
                const auto name = text(unit, "unit");
                ev = fmt("unit %s: grad norm %.3gx its mean, adam_v_min %.3g, update/param %.3g", name ? name->c_str() : "?", *g,
                         *v, *ur);
            }
        }
    c.score = best < 0 ? 0 : best;
    c.evidence = best < 0 ? kNotMeasured : ev;
    // A larger eps bounds the update where the second moment collapsed; a shorter memory of it
    // (beta2 0.95) recovers sooner, where the run kept a longer one.
    json changed = json::object();
    const json* cfg = field(run.config, "eps");
    const double eps = cfg && cfg->is_number() ? cfg->get<double>() : 1e-8;
    // Compared and given as the float the option is: the run's 1e-6 is 9.99999997e-7 as a double.
    changed["eps"] = static_cast<float>(eps) < 1e-6f ? 1e-6f : static_cast<float>(10 * eps);
    if (const json* b2 = field(run.config, "beta2"); b2 && b2->is_number() && b2->get<float>() > 0.95f) changed["beta2"] = 0.95;
    c.next = run.resume(changed, "eps");
    return c;
}

Cause hardware(const json& report, const RunFacts& run) {
    Cause c{"hardware_nondeterminism"};
    const json* d = field(report, "determinism");
    const json det = d ? *d : json::object();
    const auto equal = boolean(det, "bitwise_equal");
    const auto first = num(det, "loss"), again = num(det, "loss_again");
    const std::string losses = first && again ? fmt(" (loss %.9g then %.9g)", *first, *again) : "";
    if (!equal) c.evidence = kNotMeasured;
    else if (*equal) c.evidence = "the same batch through the same weights again: bitwise equal" + losses;
    else c.evidence = "the same batch through the same weights again: NOT bitwise equal" + losses;
    c.score = equal && !*equal ? 1 : 0;
    // Other arithmetic for the same replay: the CPU, which every machine has, for a GPU run; a
    // CPU run's replay again on another machine (a GPU may not be there to suggest).
    c.next = run.replay() + (run.device == "cpu" ? "" : " --device cpu");
    return c;
}

}  // namespace

json rank_spike_causes(const json& report) {
    const RunFacts run(report);
    // In the order (cheapest diagnostic first); a stable sort keeps it among equal scores.
    std::vector<Cause> causes = {attention_logits(report, run), learning_rate(report, run), data_state(report, run),
                                 optimizer_state(report, run), hardware(report, run)};
    std::stable_sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) { return a.score > b.score; });
    json out = json::array();
    for (const Cause& c : causes)
        out.push_back({{"cause", c.name}, {"score", std::round(c.score * 1000) / 1000}, {"evidence", c.evidence}, {"next", c.next}});
    return out;
}

std::string spike_report_text(const json& report) {
    std::string s;
    const auto step = num(report, "step");
    s += step ? fmt("Loss spike at step %lld", static_cast<long long>(*step)) : std::string("Loss spike");
    if (auto action = text(report, "action")) s += " (action: " + *action + ")";
    const json* tr = field(report, "trigger");
    const json t = tr ? *tr : json::object();
    if (const json* fired = field(t, "fired_on"); fired && fired->is_array()) {
        std::vector<std::string> on;
        for (const json& f : *fired)
            if (f.is_string()) on.push_back(f.get<std::string>());
        if (!on.empty()) s += ", fired on " + join(on, " and ");
    }
    s += "\n";
    auto stat = [&](const char* label, const char* v, const char* m, const char* sd, const char* z) {
        const auto x = num(t, v);
        if (!x) return;
        s += fmt("  %s %.5g", label, *x);
        if (auto mean = num(t, m)) s += fmt(" (mean %.5g", *mean) + (num(t, sd) ? fmt(", std %.3g", *num(t, sd)) : "") +
                                       (num(t, z) ? fmt(", z %.1f", *num(t, z)) : "") + ")";
        s += "\n";
    };
    stat("loss", "loss", "loss_mean", "loss_std", "loss_z");
    stat("grad norm", "grad_norm", "grad_mean", "grad_std", "grad_z");
    if (const json* l = field(report, "learning_rate")) {
        if (auto lr = num(*l, "lr")) {
            s += fmt("  lr %.3g", *lr);
            std::vector<std::string> p;
            if (auto v = num(*l, "scheduled_lr")) p.push_back(fmt("schedule %.3g", *v));
            if (auto v = text(*l, "schedule")) p.push_back(*v);
            if (auto v = text(*l, "phase")) p.push_back(*v);
            if (auto v = num(*l, "fraction_of_schedule")) p.push_back(fmt("%.0f%% through", 100 * *v));
            if (boolean(*l, "injected").value_or(false)) p.push_back("injected");
            s += (p.empty() ? "" : " (" + join(p, ", ") + ")") + "\n";
        }
    }
    if (const json* b = field(report, "batch")) {
        const json* rows = field(*b, "rows");
        s += "  batch";
        if (rows && rows->is_array()) s += fmt(": %zu rows", rows->size());
        if (auto T = num(*b, "seq_len")) s += fmt(" x %lld tokens", static_cast<long long>(*T));
        if (auto l = num(*b, "loss")) s += fmt(", loss %.5g", *l);
        if (auto r = num(*b, "recent_loss_mean")) s += fmt(" (recent mean %.5g)", *r);
        if (boolean(*b, "injected_junk").value_or(false)) s += ", junk injected";
        s += "\n";
    }
    if (const json* d = field(report, "determinism")) {
        if (auto eq = boolean(*d, "bitwise_equal")) {
            s += "  determinism re-check: ";
            const auto a = num(*d, "loss"), b = num(*d, "loss_again");
            if (a && b) s += fmt("loss %.9g then %.9g, ", *a, *b);
            s += std::string(*eq ? "bitwise equal" : "NOT bitwise equal") + "\n";
        }
    }
    const json* given = field(report, "causes");
    const json causes = given && given->is_array() ? *given : rank_spike_causes(report);
    s += "Causes, most likely first:\n";
    int i = 0;
    for (const json& c : causes) {
        const auto name = text(c, "cause"), ev = text(c, "evidence"), next = text(c, "next");
        s += fmt("  %d. %-24s %.2f  ", ++i, name ? name->c_str() : "?", num(c, "score").value_or(0)) + ev.value_or("") + "\n";
        if (next) s += "     next: " + *next + "\n";
    }
    return s;
}

}  // namespace sixnd
