// The --profile table prints each number to five significant digits: it once cut the text of a
// number to its first characters, so 12,345,678 GFLOP read 1234567 and a roof of 123,456% read
// 12345.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "train/profile.h"

using nlohmann::json;

namespace {

json report_with_row(double gflop, double intensity, double roof_fraction) {
    const json row{{"name", "matmul"},      {"seconds_per_step", 0.5}, {"share", 0.5}, {"calls_per_step", 3.0},
                   {"flops_per_step", gflop * 1e9}, {"intensity", intensity}, {"bound", "compute"},
                   {"roof_fraction", roof_fraction}};
    return json{{"steps", 4},         {"first_step", 2},          {"step_s", 1.0},   {"ridge_flop_per_byte", 10.0},
                {"peak_flops", 1e12}, {"peak_source", "features"}, {"mem_bw", 1e11}, {"bw_source", "measured"},
                {"rows", json::array({row})}, {"ops_and_regions_fraction_of_step", 0.9}, {"mfu", 0.4}, {"hfu", 0.5},
                {"mfu_vs_hfu", json::array()}};
}

// The table's row for the one op.
std::string row_line(const json& report) {
    const std::string table = sixnd::StepProfiler::table(report);
    const size_t at = table.find("\nmatmul");
    EXPECT_NE(at, std::string::npos) << table;
    return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST(ProfileTable, LargeNumbersKeepTheirMagnitude) {
    const std::string line = row_line(report_with_row(12345678.0, 23456789.0, 1234.567));
    EXPECT_NE(line.find(" 1.2346e+07 "), std::string::npos) << line;
    EXPECT_NE(line.find(" 2.3457e+07 "), std::string::npos) << line;
    EXPECT_NE(line.find(" 1.2346e+05"), std::string::npos) << line;
}

TEST(ProfileTable, SmallNumbersKeepTheirDigits) {
    const std::string line = row_line(report_with_row(0.000123456, 3.5, 0.8765));
    EXPECT_NE(line.find(" 0.00012346 "), std::string::npos) << line;
    EXPECT_NE(line.find(" 3.5 "), std::string::npos) << line;
    EXPECT_NE(line.find(" 87.65"), std::string::npos) << line;
}
