#include "plan/report.h"

#include <cmath>
#include <cstdio>

namespace sixnd::plan {

void Report::add(const std::string& section, const std::string& key, double value, Unit unit, const std::string& formula) {
    rows_.push_back({section, key, value, unit, formula});
}

void Report::text(const std::string& section, const std::string& key, const std::string& value, const std::string& formula) {
    rows_.push_back({section, key, value, Unit::text, formula});
}

nlohmann::json Report::to_json() const {
    nlohmann::json j = nlohmann::json::object(), formulas = nlohmann::json::object();
    for (const Row& r : rows_) {
        j[r.section][r.key] = r.value;
        if (!r.formula.empty()) formulas[r.section + "." + r.key] = r.formula;
    }
    j["formulas"] = formulas;
    j["notes"] = notes_;
    return j;
}

static std::string fmt(const char* f, double v, const char* suffix) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v, suffix);
    return buf;
}

std::string human(double v, Unit u) {
    if (!std::isfinite(v)) return "-";
    switch (u) {
        case Unit::bytes:
            if (std::fabs(v) >= 1e9) return fmt("%.4g %s", v / 1e9, "GB");
            if (std::fabs(v) >= 1e6) return fmt("%.4g %s", v / 1e6, "MB");
            return fmt("%.0f %s", v, "B");
        case Unit::seconds:
            if (v >= 86400 * 2) return fmt("%.4g %s", v / 86400, "days");
            if (v >= 3600) return fmt("%.4g %s", v / 3600, "h");
            if (v >= 60) return fmt("%.4g %s", v / 60, "min");
            if (v >= 1) return fmt("%.4g %s", v, "s");
            return fmt("%.4g %s", v * 1e3, "ms");
        case Unit::dollars: return fmt("$%.4g%s", v, "");
        case Unit::flops: return fmt("%.3g %s", v, "FLOP");
        case Unit::params: return fmt("%.4g %s", v, "params");
        case Unit::tokens: return fmt("%.4g %s", v, "tokens");
        case Unit::per_second: return fmt("%.4g %s", v, "/s");
        case Unit::ratio: return fmt("%.4g%s", v, "");
        case Unit::count:
            if (std::fabs(v) < 1e15) return fmt(v == std::floor(v) ? "%.0f%s" : "%.2f%s", v, "");
            return fmt("%.6g%s", v, "");
        default: return fmt("%.6g%s", v, "");
    }
}

std::string given(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.15g", v);
    return b;
}

std::string Report::to_table() const {
    std::string out, section;
    for (const Row& r : rows_) {
        if (r.section != section) {
            section = r.section;
            out += "\n" + section + "\n";
        }
        const std::string v = r.unit == Unit::text ? r.value.get<std::string>() : human(r.value.get<double>(), r.unit);
        char line[512];
        std::snprintf(line, sizeof line, "  %-28s %-22s %s\n", r.key.c_str(), v.c_str(), r.formula.c_str());
        out += line;
    }
    for (const auto& n : notes_) out += "note: " + n + "\n";
    return out;
}

}  // namespace sixnd::plan
