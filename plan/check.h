// `sixnd plan --check RUN.jsonl`: the planner's predictions for a finished run beside what the
// run measured, with the ratio of each — memory by category and peak (rank 0, and every rank
// under mpirun), step time at the run's measured MFU, bytes sent per rank per step, FLOPs per
// step. The run log header carries what the prediction needs: the resolved config, the model
// shape, the layout's unit sizes, the world size and the peak FLOP/s.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/planner.h"

namespace sixnd::plan {

struct CheckRow {
    std::string quantity;
    double predicted = 0, measured = 0;
    Unit unit = Unit::bytes;
    std::string formula;
    double ratio() const;  // predicted / measured (1 when both are 0)
};

struct CheckResult {
    std::vector<CheckRow> rows;
    std::vector<std::string> notes;
    nlohmann::json to_json() const;
    std::string to_table() const;
    const CheckRow& find(const std::string& quantity) const;
};

// header: the run log's header record; steps: its step records in order; model: the header's
// model with its layout (built by the caller).
CheckResult check_run(const nlohmann::json& header, const std::vector<nlohmann::json>& steps, const ModelInfo& model);

}  // namespace sixnd::plan
