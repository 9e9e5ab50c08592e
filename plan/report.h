// A plan or check result as rows (section, key, value, unit, formula) that become both the JSON
// object ({section: {key: value}}, formulas beside) and the human table, so the two always say
// the same thing.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd::plan {

// count: a number a user passes on (train's --steps, --total-batch-tokens), so with every digit.
enum class Unit { none, count, flops, params, tokens, bytes, seconds, dollars, ratio, per_second, text };

struct Row {
    std::string section, key;
    nlohmann::json value;  // a number in base units, or text
    Unit unit = Unit::none;
    std::string formula;
};

class Report {
public:
    void add(const std::string& section, const std::string& key, double value, Unit unit, const std::string& formula = "");
    void text(const std::string& section, const std::string& key, const std::string& value, const std::string& formula = "");
    void note(const std::string& line) { notes_.push_back(line); }
    nlohmann::json to_json() const;
    std::string to_table() const;
    const std::vector<Row>& rows() const { return rows_; }

private:
    std::vector<Row> rows_;
    std::vector<std::string> notes_;
};

// "3.79e+25 FLOP", "112 GB", "3.09 h": a value in the unit's human form.
std::string human(double v, Unit u);

// An input as an error quotes it, to 15 digits: %g would show 10001 devices as 1e+04 (which do
// split into 2 stages) or an MFU of 1.00001 as 1 (which is no fraction above 1).
std::string given(double v);

}  // namespace sixnd::plan
