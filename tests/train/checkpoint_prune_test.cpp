// --keep-last against --on-spike rollback to checkpoints on disk: a spike after step N rolls back
// to the newest checkpoint at least --rollback-steps before it, and pruning keeps that one and
// every newer one, whatever --keep-last says. Before, --keep-last 3 with --checkpoint-every 2 and
// the default --rollback-steps 10 deleted every checkpoint a rollback could use, and each spike
// was skipped instead ("no state 10 steps before the spike").
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/util/checkpoint_stub.h"
#include "tests/util/test_util.h"
#include "train/checkpoint.h"

using namespace sixnd;

namespace {

std::vector<int> steps_under(const std::string& root) {
    std::vector<int> steps;
    for (const CheckpointEntry& e : list_checkpoints(root)) steps.push_back(e.step);
    return steps;
}

// Saves steps 2, 4, ..., `last` as a run with --checkpoint-every 2 does, pruning after each.
std::vector<int> run_saving_to(const std::string& root, int last, int keep, int rollback_steps) {
    for (int step = 2; step <= last; step += 2) {
        test::save_stub_checkpoint(root, step);
        prune_checkpoints(root, keep, "0123456789abcdef", step, rollback_steps > 0 ? std::max(0, step + 1 - rollback_steps) : -1);
    }
    return steps_under(root);
}

}  // namespace

TEST(CheckpointPrune, KeepsWhatARollbackAtTheNextStepNeeds) {
    test::TempDir t("sixnd_ckprune_");
    // After step 20 a spike at 21 needs the newest at or before 11: step 10, and 12 .. 18 are
    // newer states for spikes at 23 .. 29.
    EXPECT_EQ(run_saving_to(t.dir + "/a", 20, 3, 10), (std::vector<int>{10, 12, 14, 16, 18, 20}));
    // Without a rollback to checkpoints, --keep-last alone decides.
    EXPECT_EQ(run_saving_to(t.dir + "/b", 20, 3, 0), (std::vector<int>{16, 18, 20}));
    // A --keep-last that already holds the horizon's checkpoint keeps no more.
    EXPECT_EQ(run_saving_to(t.dir + "/c", 20, 3, 3), (std::vector<int>{16, 18, 20}));
    // --rollback-steps 1: the newest checkpoint is the one to roll back to.
    EXPECT_EQ(run_saving_to(t.dir + "/d", 20, 1, 1), (std::vector<int>{20}));
    // Early in a run, before any checkpoint is old enough: all stay, for the spikes to come.
    EXPECT_EQ(run_saving_to(t.dir + "/e", 6, 1, 10), (std::vector<int>{2, 4, 6}));
}

TEST(CheckpointPrune, AnotherRunsCheckpointIsNotTheRollbacks) {
    test::TempDir t("sixnd_ckprune_");
    const std::string root = t.dir + "/checkpoints";
    test::save_stub_checkpoint(root, 4, "fedcba9876543210");
    for (int step : {2, 6, 8}) test::save_stub_checkpoint(root, step);
    // A spike at 9 with --rollback-steps 4 goes back to step 2, this run's newest at or before 5.
    prune_checkpoints(root, 1, "0123456789abcdef", 8, 5);
    EXPECT_EQ(steps_under(root), (std::vector<int>{2, 4, 6, 8}));
}
