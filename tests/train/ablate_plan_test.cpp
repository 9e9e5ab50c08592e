// The ablation plan: --vary parsing, one-knob-at-a-time variants (the first value is the base's),
// directory names, which knobs are speed-only, and the errors for malformed specs; and the
// table's comparison when a run diverged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tests/util/test_util.h"
#include "train/ablate.h"

namespace {

using sixnd::ablation_variants;
using sixnd::parse_vary;

TEST(AblatePlan, OneKnobAtATime) {
    const auto knobs = parse_vary({"recompute=none,selective,full", "--lr=1e-3,3e-3", "tokenizer=a/b.tok,c d.tok"});
    ASSERT_EQ(knobs.size(), 3u);
    EXPECT_EQ(knobs[1].name, "lr");
    const auto v = ablation_variants(knobs);
    ASSERT_EQ(v.size(), 1u + 2 + 1 + 1);
    EXPECT_EQ(v[0].name, "base");
    EXPECT_TRUE(v[0].knob.empty());
    EXPECT_EQ(v[1].name, "recompute=selective");
    EXPECT_TRUE(v[1].speed_only);
    EXPECT_EQ(v[2].value, "full");
    EXPECT_EQ(v[3].name, "lr=3e-3");
    EXPECT_FALSE(v[3].speed_only);
    EXPECT_EQ(v[4].value, "c d.tok");
    EXPECT_EQ(v[4].dir, "tokenizer=c_d.tok");  // no spaces or slashes in directory names
    EXPECT_TRUE(sixnd::speed_only_knob("attention"));
    EXPECT_TRUE(sixnd::speed_only_knob("zero"));
    EXPECT_FALSE(sixnd::speed_only_knob("dtype"));
}

TEST(AblatePlan, DirectoryNamesFitNameMax) {
    // Config files deep in a tree, as the values of --vary config: the directory names a path of
    // 300 characters gives would not be created (after the runs before them had run).
    const std::string deep = "/" + std::string(300, 'd') + "/";
    const auto v = ablation_variants(parse_vary({"config=a.toml," + deep + "b.toml," + deep + "c.toml"}));
    ASSERT_EQ(v.size(), 3u);
    for (const auto& x : v) EXPECT_LE(x.dir.size(), 255u) << x.dir;
    EXPECT_NE(v[1].dir, v[2].dir);
    EXPECT_EQ(v[1].dir.rfind("config=_ddd", 0), 0u) << v[1].dir;
}

TEST(AblatePlan, BadSpecs) {
    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
             {}, {"lr"}, {"lr="}, {"=1,2"}, {"lr=1e-3"}, {"lr=1,,2"}, {"lr=1,1"}, {"lr=1,2", "lr=3,4"},
             {"seed=1,2"}, {"out=a,b"}, {"log=a,b"}, {"resume=a,b"}, {"check=a,b"}, {"help=1,2"}, {"--h=1,2"},
             {"data=a,x/y,x_y"}})
        EXPECT_THROW(ablation_variants(parse_vary(bad)), sixnd::Error) << (bad.empty() ? "" : bad[0]);
}

TEST(AblateTable, ADivergedSeedLeavesNoComparison) {
    namespace fs = std::filesystem;
    const sixnd::test::TempDir t("sixnd_ablate_table_");
    sixnd::AblationSpec spec;
    spec.out = t.dir;
    spec.knobs = parse_vary({"lr=1e-3,1e-2"});
    spec.seeds = 3;
    spec.base_seed = 1;
    // Every run evaluates at step 2; seed 3 of lr=1e-2 then ends on non-finite steps.
    for (const char* dir : {"base", "lr=1e-2"})
        for (int seed = 1; seed <= 3; seed++) {
            const fs::path run = fs::path(spec.out) / "runs" / dir / ("seed-" + std::to_string(seed));
            fs::create_directories(run);
            const double val = 3.0 + 0.01 * seed + (dir[0] == 'l' ? 0.5 : 0.0);
            std::ofstream log(run / "run.jsonl");
            log << "{\"type\":\"header\",\"config\":{},\"model\":{}}\n"
                << "{\"type\":\"step\",\"step\":2,\"loss\":3.5,\"tokens\":64}\n"
                << "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":" << val << ",\"batches\":1}\n";
            if (dir[0] == 'l' && seed == 3)
                log << "{\"type\":\"event\",\"event\":\"skip\",\"step\":3,\"consecutive\":1,\"grad_norm\":null,\"loss\":null,"
                       "\"reason\":\"non_finite\"}\n"
                    << "{\"type\":\"event\",\"event\":\"eval\",\"step\":3,\"val_loss\":null,\"batches\":1}\n";
        }
    const nlohmann::json r = sixnd::ablation_results(spec);
    const nlohmann::json& v = r["variants"][1];
    EXPECT_EQ(v["metrics"]["val_loss"]["n"], 2) << v["metrics"]["val_loss"];
    // Two surviving seeds 0.5 above the base would read as a clear win for the base, or a loss;
    // the third has no loss to compare.
    EXPECT_TRUE(v["val_loss_diff"].is_null()) << v;
    EXPECT_TRUE(v["p_value"].is_null()) << v;
    EXPECT_TRUE(r["variants"][0]["metrics"]["val_loss"]["std"].is_number());
}

}  // namespace
