// The replay's verdict rule: each of the four verdicts from the losses that define it, the
// threshold's two arms (spread and relative margin), and a report's rows read back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "train/replay.h"

namespace sixnd {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Baselines of loss 3.0 +- 0.05 from the checkpoint and 3.6 +- 0.05 from the earlier one.
ReplayLosses losses(double spike, double earlier_spike, double reference = 3.0) {
    return {spike, 3.0, 0.05, earlier_spike, 3.6, 0.05, reference};
}

TEST(ReplayVerdict, Threshold) {
    const ReplayRule rule;  // 3 sigmas, 10% margin
    EXPECT_DOUBLE_EQ(spike_threshold(3.0, 0.05, rule), 3.3);  // the margin wins over a tight spread
    EXPECT_DOUBLE_EQ(spike_threshold(3.0, 0.5, rule), 4.5);   // the spread wins
    EXPECT_FALSE(4.0 > spike_threshold(kNaN, 0, rule));       // an unknown baseline flags nothing
}

TEST(ReplayVerdict, Data) {
    // The rows are high from both states: the batch is bad whatever it meets.
    EXPECT_EQ(replay_verdict(losses(5.8, 5.9)), "data");
}

TEST(ReplayVerdict, Interaction) {
    // High from the state before the spike only: PaLM's finding.
    EXPECT_EQ(replay_verdict(losses(5.8, 3.7)), "interaction");
    // Just above the earlier baseline's threshold (3.96) is still not a spike there.
    EXPECT_EQ(replay_verdict(losses(5.8, 3.95)), "interaction");
    EXPECT_EQ(replay_verdict(losses(5.8, 3.97)), "data");
}

TEST(ReplayVerdict, State) {
    // Everything is high from this state: the other batches as much as the spike rows, all
    // well above the run's loss before the spike.
    ReplayLosses l{5.9, 5.8, 0.1, 3.7, 3.6, 0.05, 3.0};
    EXPECT_EQ(replay_verdict(l), "state");
    // Without the run's loss to compare with, a uniformly high state cannot be told apart.
    l.reference = kNaN;
    EXPECT_EQ(replay_verdict(l), "not_reproducible");
}

TEST(ReplayVerdict, AnOlderCheckpointIsNotADamagedState) {
    // A healthy run replayed from a checkpoint taken while it was still learning (the numbers of
    // a tiny run: checkpoints at steps 20 and 10, a grad-norm spike at 81 after the loss fell to
    // 4.77): everything is above the run's loss before the spike, and higher still from the
    // earlier checkpoint. The state is older, not damaged.
    EXPECT_EQ(replay_verdict({5.2976, 5.3123, 0.0255, 5.5177, 5.5394, 0.0217, 4.7655}), "not_reproducible");
}

TEST(ReplayVerdict, NotReproducible) {
    EXPECT_EQ(replay_verdict(losses(3.1, 3.7)), "not_reproducible");
    EXPECT_EQ(replay_verdict(losses(3.29, 6.0)), "not_reproducible");  // under the margin: (c) does not matter
    // High against the run's loss but not against the other batches, which are not high: noise.
    EXPECT_EQ(replay_verdict({3.35, 3.2, 0.1, 3.7, 3.6, 0.05, 3.0}), "not_reproducible");
}

TEST(ReplayVerdict, RuleIsAParameter) {
    ReplayRule strict;
    strict.margin = 1.0;  // spikes must double the loss
    EXPECT_EQ(replay_verdict(losses(5.8, 5.9), strict), "not_reproducible");
    EXPECT_EQ(replay_verdict(losses(6.5, 5.9), strict), "interaction");
    EXPECT_EQ(replay_verdict(losses(6.5, 7.5), strict), "data");
}

std::string write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/" + name;
    std::ofstream(path) << text;
    return path;
}

TEST(ReplayReport, ReadsRowsReferenceAndEarlierCheckpoint) {
    const std::string p = write("spike_ok.json", R"({"step": 140, "run": {"seq_len": 32, "checkpoint_earlier": "ck/step-00000050"},
        "trigger": {"loss_mean": 3.25},
        "batch": {"rows": [{"shard": "a.bin", "offset": 0}, {"shard": "b.bin", "offset": 4096, "loss": 9.5}]}})");
    const SpikeReportRows r = read_spike_report(p);
    EXPECT_EQ(r.step, 140);
    EXPECT_EQ(r.seq_len, 32);  // from run.seq_len when batch.seq_len is absent
    ASSERT_EQ(r.rows.size(), 2u);
    EXPECT_EQ(r.rows[1].shard, "b.bin");
    EXPECT_EQ(r.rows[1].offset, 4096u);
    EXPECT_TRUE(std::isnan(r.rows[0].loss));  // the run's loss of a row, when the report has it
    EXPECT_EQ(r.rows[1].loss, 9.5);
    EXPECT_DOUBLE_EQ(r.reference, 3.25);
    EXPECT_EQ(r.checkpoint_earlier, "ck/step-00000050");
    std::remove(p.c_str());
}

TEST(ReplayReport, RefusesReportsItCannotReplay) {
    const std::pair<const char*, const char*> cases[] = {
        {"{not json", "not a JSON spike report"},
        {"[1]", "expected a JSON object"},
        {R"({"batch": {"seq_len": 8, "rows": [{"shard": "a", "offset": 0}]}})", "has no \"step\""},
        {R"({"step": 3, "batch": {"seq_len": 8}})", "has no batch rows"},
        {R"({"step": 3, "batch": {"seq_len": 8, "rows": []}})", "has no batch rows"},
        {R"({"step": 3, "batch": {"rows": [{"shard": "a", "offset": 0}]}})", "has no usable seq_len"},
        {R"({"step": 3, "batch": {"seq_len": 8, "rows": [{"offset": 0}]}})", "batch row 0 has no \"shard\""},
        {R"({"step": 3, "batch": {"seq_len": 8, "rows": [{"shard": "a", "offset": -4}]}})", "batch row 0 has no \"offset\""},
    };
    for (const auto& [text, words] : cases) {
        const std::string p = write("spike_bad.json", text);
        try {
            read_spike_report(p);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), p);
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
        std::remove(p.c_str());
    }
}

}  // namespace
}  // namespace sixnd
