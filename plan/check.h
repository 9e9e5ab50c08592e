// `sixnd plan --check RUN.jsonl`: the planner's predictions for a finished run beside what the
// run measured, with the ratio of each — memory by category and peak (rank 0, and every rank
// under mpirun), step time at the run's measured MFU, bytes sent per rank per step, FLOPs per
// step. The run log header carries what the prediction needs: the resolved config, the model
// shape, the layout's unit sizes, the world size and the peak FLOP/s.
#pragma once
#include <climits>
#include <initializer_list>
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

// One record of a run log and the line it was read from.
struct LogRecord {
    nlohmann::json json;
    int line = 0;
};

// Checked reads from a run-log record, for a log that may be edited, truncated or from another
// program: a missing field, a value of the wrong type or out of range ends in one error naming
// FILE:LINE and the field's path in the record (`config.batch`), so that no impossible number
// reaches the arithmetic. The record must outlive the reader.
class LogFields {
public:
    LogFields(const std::string& path, const LogRecord& r);
    const std::string& where() const { return where_; }  // FILE:LINE
    bool has(const std::string& key) const;
    bool is_null(const std::string& key) const;  // present, and JSON null
    std::vector<std::string> keys() const;
    LogFields object(const std::string& key) const;
    size_t array_size(const std::string& key) const;
    LogFields element(const std::string& key, size_t i) const;  // key[i], an object
    // Finite and >= 0, or > 0 with `positive`.
    double number(const std::string& key, bool positive = false) const;
    double number_or(const std::string& key, double fallback) const;  // non-negative, when present
    double signed_number(const std::string& key) const;  // finite, of either sign (a z-score)
    int integer(const std::string& key, int min, int max = INT_MAX) const;
    int integer_or(const std::string& key, int min, int fallback) const;
    bool boolean(const std::string& key) const;
    std::string text(const std::string& key) const;
    std::vector<std::string> texts(const std::string& key) const;  // an array of strings
    std::string choice(const std::string& key, std::initializer_list<const char*> allowed) const;
    std::string choice_or(const std::string& key, std::initializer_list<const char*> allowed, const std::string& fallback) const;

private:
    LogFields(std::string where, std::string prefix, const nlohmann::json* j);
    const nlohmann::json& at(const std::string& key) const;
    [[noreturn]] void fault(const std::string& key, const std::string& what) const;
    std::string where_, prefix_;
    const nlohmann::json* j_;
};

// A step record's fields as the trainer writes them, each where present: the step a non-negative
// integer, its numbers finite and non-negative (step_ms positive; an evaluation's may be null),
// its memory and per-rank records objects of numbers. `plan --check` holds every step record of
// the log to this, so that one edited into impossible values is refused whether or not a
// prediction reads the field.
void check_step_record(const LogFields& step);

// An event record's fields as the trainer writes them (RunLog::event): every event's kind and
// step, and each known kind's fields (eval, eval_task, checkpoint, spike, skip, rollback,
// inject, stop, profile, bill). A field every sixnd has written since run logs carried the
// layout record `plan --check` needs must be there; one added later is checked where present.
// An unknown kind is checked for its kind and step only, as records of an unknown type are
// passed over: a newer sixnd's log still checks. A fault names the event's kind and the field.
void check_event_record(const LogFields& event);

// path: the run log; header: its header record; steps: the step records after it, in order;
// model: the header's model with its layout (built by the caller).
CheckResult check_run(const std::string& path, const LogRecord& header, const std::vector<LogRecord>& steps,
                      const ModelInfo& model);

}  // namespace sixnd::plan
