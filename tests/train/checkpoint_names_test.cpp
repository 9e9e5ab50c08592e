// Checkpoint directory names: `step-%08d` takes a ninth digit from step 100,000,000 on (steps go
// to INT_MAX), and a checkpoint of such a step is still one of the run's — found by
// `--resume latest`, pruned by --keep-last — not a stranger's entry skipped by both.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "train/checkpoint.h"
#include "tests/util/checkpoint_stub.h"
#include "tests/util/test_util.h"

using namespace sixnd;
namespace fs = std::filesystem;

TEST(CheckpointNames, StepsPastEightDigitsAreTheRunsCheckpoints) {
    test::TempDir t("sixnd_ckname_");
    const std::string root = t.dir + "/checkpoints";
    const std::vector<int> steps{99999999, 100000000, 2147483647};
    for (int s : steps) test::save_stub_checkpoint(root, s);
    std::vector<int> listed;
    for (const CheckpointEntry& e : list_checkpoints(root)) listed.push_back(e.step);
    EXPECT_EQ(listed, steps);
    EXPECT_EQ(latest_checkpoint(root), root + "/step-2147483647");
    prune_checkpoints(root, 2, "0123456789abcdef", 2147483647);
    EXPECT_FALSE(fs::exists(root + "/step-99999999"));
    EXPECT_TRUE(fs::exists(root + "/step-100000000"));
}

TEST(CheckpointNames, OnlyTheWritersSpellingIsACheckpoint) {
    test::TempDir t("sixnd_ckname_");
    const std::string root = t.dir + "/checkpoints";
    test::save_stub_checkpoint(root, 5);
    // Other spellings of a step (a leading zero too many, a number past INT_MAX) are not entries
    // a save would write, so neither listed nor refused.
    for (const char* name : {"step-000000005", "step-2147483648", "step-99999999999", "step-1"})
        fs::create_directories(root + "/" + name + "/x");
    ASSERT_EQ(list_checkpoints(root).size(), 1u);
    EXPECT_EQ(list_checkpoints(root)[0].step, 5);
    EXPECT_NO_THROW(refuse_foreign_step_entries(root));
}
