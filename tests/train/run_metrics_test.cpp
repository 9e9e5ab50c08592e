// A run's metrics read back from its log (train/run_metrics.h): the validation numbers are the
// last evaluation's, whether a step record or only an eval event (a skipped step's) holds them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tests/util/test_util.h"
#include "train/run_metrics.h"

using namespace sixnd;
namespace fs = std::filesystem;

namespace {

std::string write_log(const std::string& name, const std::string& body) {
    static const test::TempDir dir("sixnd_run_metrics_");
    const fs::path p = fs::path(dir.dir) / name;
    std::ofstream(p) << "{\"type\":\"header\",\"config\":{},\"model\":{}}\n" << body;
    return p.string();
}

const char* kStep = "{\"type\":\"step\",\"step\":%d,\"loss\":%g,\"tokens\":64%s}\n";

std::string step(int n, double loss, const std::string& extra = "") {
    char b[256];
    std::snprintf(b, sizeof b, kStep, n, loss, extra.c_str());
    return b;
}

}  // namespace

TEST(RunMetrics, ValidationIsTheLastEvaluations) {
    const std::string log = write_log("steps", step(1, 3.0) + step(2, 2.5, ",\"val_loss\":2.75,\"val_bpb\":1.5") +
                                                   "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"val_bpb\":1.5,\"batches\":1}\n");
    const RunMetrics m = read_run_metrics(log);
    EXPECT_DOUBLE_EQ(m.values["final_train_loss"].get<double>(), 2.5);
    EXPECT_DOUBLE_EQ(m.values["val_loss"].get<double>(), 2.75);
    EXPECT_DOUBLE_EQ(m.values["val_bpb"].get<double>(), 1.5);
}

TEST(RunMetrics, ASkippedStepsEvaluationCounts) {
    // Step 4 was skipped (no step record) but evaluated at the end of the run.
    const std::string log = write_log(
        "skipped", step(2, 2.5, ",\"val_loss\":2.75") + "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"batches\":1}\n" +
                       step(3, 2.25) + "{\"type\":\"event\",\"event\":\"skip\",\"step\":4,\"consecutive\":1,\"grad_norm\":99,\"loss\":9}\n" +
                       "{\"type\":\"event\",\"event\":\"eval\",\"step\":4,\"val_loss\":2.5,\"val_bpb\":1.25,\"batches\":1}\n");
    const RunMetrics m = read_run_metrics(log);
    // The run ran step 4, skipped or not (sixnd train's summary says so too).
    EXPECT_EQ(m.last_step, 4);
    EXPECT_DOUBLE_EQ(m.values["val_loss"].get<double>(), 2.5);
    EXPECT_DOUBLE_EQ(m.values["val_bpb"].get<double>(), 1.25);
}

TEST(RunMetrics, ARunThatEndedDivergedHasNoFinalLosses) {
    // Evaluated at step 2, then every step from 3 on non-finite (skipped), evaluated again at 4
    // without a finite loss: step 2's numbers are not this run's end.
    const std::string log = write_log(
        "diverged", step(1, 3.0) + step(2, 2.5, ",\"val_loss\":2.75,\"val_bpb\":1.5") +
                        "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"val_bpb\":1.5,\"batches\":1}\n" +
                        "{\"type\":\"event\",\"event\":\"skip\",\"step\":3,\"consecutive\":1,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n" +
                        "{\"type\":\"event\",\"event\":\"skip\",\"step\":4,\"consecutive\":2,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n" +
                        "{\"type\":\"event\",\"event\":\"eval\",\"step\":4,\"val_loss\":null,\"batches\":1}\n");
    const RunMetrics m = read_run_metrics(log);
    EXPECT_EQ(m.last_step, 4);
    EXPECT_TRUE(m.values["final_train_loss"].is_null()) << m.values;
    EXPECT_TRUE(m.values["val_loss"].is_null()) << m.values;
    EXPECT_TRUE(m.values["val_bpb"].is_null()) << m.values;
}

TEST(RunMetrics, ANonFiniteStepThatRecoveredLeavesTheFinalLoss) {
    const std::string log = write_log(
        "recovered", step(1, 3.0) +
                         "{\"type\":\"event\",\"event\":\"skip\",\"step\":2,\"consecutive\":1,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n" +
                         step(3, 2.5));
    EXPECT_DOUBLE_EQ(read_run_metrics(log).values["final_train_loss"].get<double>(), 2.5);
}

TEST(RunMetrics, ARunStoppedAtMaxBadStepsDivergedWhateverItsLastEvaluation) {
    // Evaluated at step 2 (finite), then stopped at step 3 by --max-bad-steps before another
    // evaluation was due: step 2's validation loss is not this run's end.
    const std::string log = write_log(
        "stopped", step(1, 3.0) + step(2, 2.5, ",\"val_loss\":2.75,\"val_bpb\":1.5") +
                       "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"val_bpb\":1.5,\"batches\":1}\n" +
                       "{\"type\":\"event\",\"event\":\"skip\",\"step\":3,\"consecutive\":1,\"grad_norm\":null,\"loss\":null,\"reason\":\"spike\"}\n" +
                       "{\"type\":\"event\",\"event\":\"stop\",\"step\":3,\"reason\":\"max_bad_steps\",\"last_checkpoint\":\"\"}\n");
    const RunMetrics m = read_run_metrics(log);
    EXPECT_TRUE(m.values["diverged"].get<bool>());
    EXPECT_TRUE(m.values["final_train_loss"].is_null()) << m.values;
    EXPECT_TRUE(m.values["val_loss"].is_null()) << m.values;
    EXPECT_TRUE(m.values["val_bpb"].is_null()) << m.values;
    EXPECT_FALSE(read_run_metrics(write_log("healthy", step(1, 3.0))).values["diverged"].get<bool>());
}

TEST(RunMetrics, EveryStopForGoodIsADivergenceAndASignalIsNot) {
    // A spike after --max-rollbacks rollbacks and an update that made the parameters non-finite
    // end the run as --max-bad-steps does (a rerun stops the same way); a signal only interrupts.
    for (const std::string reason : {"max_rollbacks", "non_finite_parameters", "signal"}) {
        const std::string log = write_log(
            "stop_" + reason, step(1, 3.0) + step(2, 2.5, ",\"val_loss\":2.75,\"val_bpb\":1.5") +
                                  "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"val_bpb\":1.5,\"batches\":1}\n" +
                                  "{\"type\":\"event\",\"event\":\"stop\",\"step\":3,\"reason\":\"" + reason + "\",\"last_checkpoint\":\"\"}\n");
        const RunMetrics m = read_run_metrics(log);
        const bool diverged = reason != "signal";
        EXPECT_EQ(m.values["diverged"].get<bool>(), diverged) << reason;
        EXPECT_EQ(m.diverged_at, diverged ? reason : "") << reason;
        EXPECT_EQ(m.values["final_train_loss"].is_null(), diverged) << reason << " " << m.values;
        EXPECT_EQ(m.values["val_loss"].is_null(), diverged) << reason << " " << m.values;
    }
}

TEST(RunMetrics, ARunThatDivergedAtItsFirstStepHasNoNumbers) {
    // A learning rate of 1e38 makes the parameters non-finite at step 1, before any step record:
    // the run is a diverged result, not a log that cannot be read.
    const RunMetrics m = read_run_metrics(write_log(
        "at_once", "{\"type\":\"event\",\"event\":\"stop\",\"step\":1,\"reason\":\"non_finite_parameters\",\"last_checkpoint\":\"\"}\n"));
    EXPECT_TRUE(m.values["diverged"].get<bool>()) << m.values;
    EXPECT_EQ(m.last_step, 1);
    for (const char* key : {"final_train_loss", "val_loss", "tokens_per_s", "mfu", "hfu"})
        EXPECT_TRUE(m.values[key].is_null()) << key << " " << m.values;
    EXPECT_THROW(read_run_metrics(write_log("no_steps", "")), Error);
}

TEST(RunMetrics, ARunResumedPastItsStopAtMaxBadStepsDidNotDiverge) {
    // Stopped at step 4 by --max-bad-steps, then resumed (a new header in the same log) from the
    // checkpoint of step 2 with another learning rate, and trained to step 5: its end is step 5.
    const std::string stopped = step(1, 3.0) + step(2, 2.5) +
                                "{\"type\":\"event\",\"event\":\"skip\",\"step\":3,\"consecutive\":1,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n"
                                "{\"type\":\"event\",\"event\":\"skip\",\"step\":4,\"consecutive\":2,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n"
                                "{\"type\":\"event\",\"event\":\"stop\",\"step\":4,\"reason\":\"max_bad_steps\",\"last_checkpoint\":\"\"}\n";
    const std::string resumed = "{\"type\":\"header\",\"config\":{},\"model\":{}}\n" + step(3, 2.25) + step(4, 2.0) +
                                step(5, 1.75, ",\"val_loss\":1.5") +
                                "{\"type\":\"event\",\"event\":\"eval\",\"step\":5,\"val_loss\":1.5,\"batches\":1}\n";
    const RunMetrics m = read_run_metrics(write_log("resumed", stopped + resumed));
    EXPECT_FALSE(m.values["diverged"].get<bool>()) << m.values;
    EXPECT_EQ(m.values["final_train_loss"], 1.75) << m.values;
    EXPECT_EQ(m.values["val_loss"], 1.5) << m.values;
    // Resumed and stopped again: diverged after all.
    const std::string again = "{\"type\":\"header\",\"config\":{},\"model\":{}}\n" + step(3, 2.25) + stopped.substr(stopped.find("{\"type\":\"event\""));
    EXPECT_TRUE(read_run_metrics(write_log("stopped_twice", stopped + again)).values["diverged"].get<bool>());
}

TEST(RunMetrics, AResumeThatOnlySkippedStepsEndsAsItsOwnBranchDid) {
    // Stopped at step 4 by --max-bad-steps (non-finite steps 3 and 4), then resumed from the
    // checkpoint of step 2 with --steps 3 under --on-spike skip, and step 3 was skipped as a
    // spike: no step record follows, yet the run went on and its branch ended on step 2's weights,
    // neither diverged nor on a non-finite step.
    const std::string stopped = step(1, 3.0) + step(2, 2.5) +
                                "{\"type\":\"event\",\"event\":\"skip\",\"step\":3,\"consecutive\":1,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n"
                                "{\"type\":\"event\",\"event\":\"skip\",\"step\":4,\"consecutive\":2,\"grad_norm\":null,\"loss\":null,\"reason\":\"non_finite\"}\n"
                                "{\"type\":\"event\",\"event\":\"stop\",\"step\":4,\"reason\":\"max_bad_steps\",\"last_checkpoint\":\"\"}\n";
    const std::string resumed = "{\"type\":\"header\",\"config\":{},\"model\":{}}\n"
                                "{\"type\":\"event\",\"event\":\"spike\",\"step\":3,\"loss\":9}\n"
                                "{\"type\":\"event\",\"event\":\"skip\",\"step\":3,\"consecutive\":1,\"grad_norm\":1.5,\"loss\":9,\"reason\":\"spike\"}\n"
                                "{\"type\":\"event\",\"event\":\"eval\",\"step\":3,\"val_loss\":2.75,\"batches\":1}\n";
    const RunMetrics m = read_run_metrics(write_log("resumed_skipping", stopped + resumed));
    EXPECT_FALSE(m.values["diverged"].get<bool>()) << m.values;
    EXPECT_TRUE(m.diverged_at.empty()) << m.diverged_at;
    EXPECT_EQ(m.values["final_train_loss"], 2.5) << m.values;
    EXPECT_EQ(m.values["val_loss"], 2.75) << m.values;
    EXPECT_EQ(m.values["spikes"], 1) << m.values;
}

TEST(RunMetrics, AResumeFromAnOlderCheckpointDropsTheBranchItLeft) {
    // Trained to step 4 (evaluated at 2 and 4, a spike at 4), then resumed from the checkpoint of
    // step 2 and stopped at step 3: steps 3 and 4 of the first branch are not this run's.
    const std::string first = step(1, 3.0, ",\"step_ms\":10") + step(2, 2.5, ",\"step_ms\":10,\"val_loss\":2.75") +
                              "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"batches\":1}\n" +
                              step(3, 2.25, ",\"step_ms\":10") +
                              "{\"type\":\"event\",\"event\":\"spike\",\"step\":4,\"loss\":9}\n" +
                              step(4, 9.0, ",\"step_ms\":10,\"val_loss\":8.5") +
                              "{\"type\":\"event\",\"event\":\"eval\",\"step\":4,\"val_loss\":8.5,\"batches\":1}\n";
    const std::string resumed = "{\"type\":\"header\",\"config\":{},\"model\":{},\"resumed_from\":\"ck/step-00000002\"}\n" +
                                step(3, 2.375, ",\"step_ms\":20") +
                                "{\"type\":\"event\",\"event\":\"stop\",\"step\":3,\"reason\":\"signal\",\"signal\":2,\"last_checkpoint\":\"\"}\n";
    const RunMetrics m = read_run_metrics(write_log("older_checkpoint", first + resumed));
    EXPECT_EQ(m.last_step, 3);
    EXPECT_EQ(m.step_loss, (std::map<int, double>{{1, 3.0}, {2, 2.5}, {3, 2.375}}));
    EXPECT_EQ(m.values["final_train_loss"], 2.375) << m.values;
    EXPECT_EQ(m.values["val_loss"], 2.75) << m.values;
    EXPECT_EQ(m.values["spikes"], 0) << m.values;
    EXPECT_DOUBLE_EQ(m.values["wall_clock_s"].get<double>(), 0.04) << m.values;
    // What sixnd report draws: steps 1-2 and step 2's evaluation (lines 2-4), the resumed step 3
    // and its stop (10-11); not the headers, nor lines 5-8 of the branch left behind.
    EXPECT_EQ(m.branch_lines, (std::vector<std::pair<int, int>>{{2, 4}, {10, 11}}));
}

TEST(RunMetrics, ARollbackDropsTheStepsItUndid) {
    // Step 5 spiked and the run rolled back to step 2, reran step 3 and was stopped: steps 3 and 4
    // of before the rollback (and step 4's evaluation) are undone; the spike is the run's.
    const std::string log = write_log(
        "rollback", step(1, 3.0) + step(2, 2.5, ",\"val_loss\":2.75") +
                        "{\"type\":\"event\",\"event\":\"eval\",\"step\":2,\"val_loss\":2.75,\"batches\":1}\n" + step(3, 2.25) +
                        step(4, 4.0, ",\"val_loss\":4.5") + "{\"type\":\"event\",\"event\":\"eval\",\"step\":4,\"val_loss\":4.5,\"batches\":1}\n" +
                        "{\"type\":\"event\",\"event\":\"spike\",\"step\":5,\"loss\":9}\n"
                        "{\"type\":\"event\",\"event\":\"rollback\",\"step\":5,\"from\":5,\"to\":2,\"batches_skipped\":13,"
                        "\"tokens_skipped\":832,\"source\":\"memory\",\"rollbacks\":1}\n" +
                        step(3, 2.125));
    const RunMetrics m = read_run_metrics(log);
    EXPECT_EQ(m.last_step, 3);
    EXPECT_EQ(m.values["final_train_loss"], 2.125) << m.values;
    EXPECT_EQ(m.values["val_loss"], 2.75) << m.values;
    EXPECT_EQ(m.values["spikes"], 1) << m.values;
    // Drawn: steps 1-2 and step 2's evaluation (lines 2-4), the spike, the rollback and step 3
    // again (8-10); not the undone steps 3-4 and step 4's evaluation (5-7).
    EXPECT_EQ(m.branch_lines, (std::vector<std::pair<int, int>>{{2, 4}, {8, 10}}));
}

namespace {

std::string event(const std::string& kind, int step, const std::string& fields) {
    return "{\"type\":\"event\",\"event\":\"" + kind + "\",\"step\":" + std::to_string(step) + "," + fields + "}\n";
}

std::string rollback(int from, int to, int n) {
    return event("rollback", from, "\"from\":" + std::to_string(from) + ",\"to\":" + std::to_string(to) +
                                       ",\"batches_skipped\":1,\"tokens_skipped\":64,\"source\":\"memory\",\"rollbacks\":" +
                                       std::to_string(n));
}

}  // namespace

TEST(RunMetrics, ARollbackDropsEveryRecordOfTheStepsItUndid) {
    // Step 4 was skipped as a spike (after a sample and a checkpoint at step 3), step 5 spiked
    // and the run rolled back to step 2, then ran step 3 again and ended: what steps 3-4 logged
    // before the rollback (a skip, a spike, a sample, a checkpoint) is not the run's, the
    // rollback and its spike are.
    const std::string log = write_log(
        "rollback_events",
        step(1, 3.0) + step(2, 2.5) + step(3, 2.25) +                                      // lines 2-4
            event("sample", 3, "\"ids\":[1],\"text\":\"a\"") +                            // 5
            event("checkpoint", 3, "\"dir\":\"ck/step-00000003\"") +                         // 6
            event("spike", 4, "\"loss\":9,\"action\":\"skip\"") +                          // 7
            event("skip", 4, "\"loss\":9,\"grad_norm\":1,\"reason\":\"spike\",\"consecutive\":1") +  // 8
            event("spike", 5, "\"loss\":9,\"action\":\"rollback\"") +                      // 9
            rollback(5, 2, 1) +                                                          // 10
            step(3, 2.125));                                                             // 11
    const RunMetrics m = read_run_metrics(log);
    EXPECT_EQ(m.last_step, 3);
    EXPECT_EQ(m.values["spikes"], 1) << m.values;
    EXPECT_EQ(m.branch_lines, (std::vector<std::pair<int, int>>{{2, 3}, {9, 11}}));
}

TEST(RunMetrics, ALaterRollbackKeepsTheRollbacksBeforeIt) {
    // Rolled back from step 4 to 3, then from step 5 to 2: the second undoes step 3 and the
    // first's steps, not the first rollback (the run did roll back twice), nor its spike.
    const std::string log = write_log(
        "rollback_twice",
        step(1, 3.0) + step(2, 2.5) + step(3, 2.25) +                  // lines 2-4
            event("spike", 4, "\"loss\":9,\"action\":\"rollback\"") + rollback(4, 3, 1) +  // 5-6
            step(4, 2.0) +                                             // 7
            event("spike", 5, "\"loss\":9,\"action\":\"rollback\"") + rollback(5, 2, 2) +  // 8-9
            step(3, 2.125));                                           // 10
    const RunMetrics m = read_run_metrics(log);
    EXPECT_EQ(m.last_step, 3);
    EXPECT_EQ(m.values["spikes"], 2) << m.values;
    EXPECT_EQ(m.step_loss, (std::map<int, double>{{1, 3.0}, {2, 2.5}, {3, 2.125}}));
    EXPECT_EQ(m.branch_lines, (std::vector<std::pair<int, int>>{{2, 3}, {5, 6}, {8, 10}}));
    // A resume from the checkpoint of step 2 leaves both rollbacks' branch.
    const RunMetrics resumed = read_run_metrics(write_log(
        "rollback_resumed", step(1, 3.0) + step(2, 2.5) + step(3, 2.25) + event("spike", 4, "\"loss\":9") + rollback(4, 3, 1) +
                                "{\"type\":\"header\",\"config\":{},\"model\":{}}\n" + step(3, 2.0)));
    EXPECT_EQ(resumed.values["spikes"], 0) << resumed.values;
    EXPECT_EQ(resumed.branch_lines, (std::vector<std::pair<int, int>>{{2, 3}, {8, 8}}));
}

TEST(RunMetrics, AResumeFromACheckpointSavedAfterARollbackKeepsIt) {
    // Step 5 spiked and rolled back to step 2; step 3 ran again and was saved, and the run was
    // killed in step 4. The resume from that checkpoint of step 3 (first step 4, before the
    // spike's step 5) continues the rolled-back branch: the rollback and its spike are the run's,
    // as in the run that was never killed.
    const std::string before = step(1, 3.0) + step(2, 2.5) + step(3, 2.25) +                    // lines 2-4
                               event("checkpoint", 3, "\"dir\":\"ck/step-00000003\"") +         // 5
                               step(4, 2.0) + event("spike", 5, "\"loss\":9,\"action\":\"rollback\"") +  // 6-7
                               rollback(5, 2, 1) + step(3, 2.125) +                             // 8-9
                               event("checkpoint", 3, "\"dir\":\"ck/step-00000003\"") +         // 10
                               step(4, 2.0);                                                    // 11
    const std::string resumed = "{\"type\":\"header\",\"config\":{},\"model\":{}}\n" + step(4, 1.875) + step(5, 1.75);  // 12-14
    const RunMetrics m = read_run_metrics(write_log("rollback_then_saved", before + resumed));
    EXPECT_EQ(m.values["spikes"], 1) << m.values;
    EXPECT_EQ(m.step_loss, (std::map<int, double>{{1, 3.0}, {2, 2.5}, {3, 2.125}, {4, 1.875}, {5, 1.75}}));
    EXPECT_EQ(m.branch_lines, (std::vector<std::pair<int, int>>{{2, 3}, {7, 10}, {13, 14}}));
    // Resumed from the first checkpoint of step 3, saved before the rollback (the second one
    // never written): the rollback is that checkpoint's future, and goes.
    const std::string killed = step(1, 3.0) + step(2, 2.5) + step(3, 2.25) + event("checkpoint", 3, "\"dir\":\"ck/step-00000003\"") +
                               step(4, 2.0) + event("spike", 5, "\"loss\":9,\"action\":\"rollback\"") + rollback(5, 2, 1);
    const RunMetrics k = read_run_metrics(write_log("rollback_then_killed", killed + resumed));
    EXPECT_EQ(k.values["spikes"], 0) << k.values;
}

TEST(RunMetrics, EachProcesssFirstStepIsItsWarmUp) {
    // Stopped after step 2 and resumed: step 3 is the resumed process's first, slow as step 1
    // was; the rate is the other steps', as in the run that was never stopped.
    const std::string log = write_log(
        "warm_up", step(1, 3.0, ",\"tokens_per_s\":10,\"mfu\":0.01") + step(2, 2.5, ",\"tokens_per_s\":100,\"mfu\":0.1") +
                       "{\"type\":\"header\",\"config\":{},\"model\":{}}\n" + step(3, 2.25, ",\"tokens_per_s\":20,\"mfu\":0.02") +
                       step(4, 2.0, ",\"tokens_per_s\":200,\"mfu\":0.2"));
    const RunMetrics m = read_run_metrics(log);
    EXPECT_DOUBLE_EQ(m.values["tokens_per_s"].get<double>(), 150) << m.values;
    EXPECT_DOUBLE_EQ(m.values["mfu"].get<double>(), 0.15) << m.values;
    // A run of one step has only its warm-up to show.
    EXPECT_DOUBLE_EQ(read_run_metrics(write_log("one_step", step(1, 3.0, ",\"tokens_per_s\":10"))).values["tokens_per_s"].get<double>(),
                     10);
}

TEST(RunMetrics, TheLastStepIsTheLastOneRunSkippedOrStopped) {
    // Steps 3 and 4 skipped as non-finite at the end of --steps 4: the run ran 4 steps.
    const std::string skipped = step(1, 3.0) + step(2, 2.5) +
                                event("skip", 3, "\"loss\":null,\"grad_norm\":null,\"reason\":\"non_finite\",\"consecutive\":1") +
                                event("skip", 4, "\"loss\":null,\"grad_norm\":null,\"reason\":\"non_finite\",\"consecutive\":2");
    EXPECT_EQ(read_run_metrics(write_log("ends_skipped", skipped)).last_step, 4);
    // Interrupted after step 2: the stop names the last step done.
    EXPECT_EQ(read_run_metrics(write_log("ends_stopped", step(1, 3.0) + step(2, 2.5) +
                                                             event("stop", 2, "\"reason\":\"signal\",\"last_checkpoint\":\"\""))).last_step,
              2);
}
