// Loss spikes on the CPU: the rolling-window detector (warm-up, outliers kept out, saved state),
// a planted spike is flagged and a clean run is not, `skip` leaves the state bitwise unchanged,
// `rollback` recovers where `warn` does not (from disk at the clean run's peak memory), and a
// rollback run resumed from a checkpoint reproduces the uninterrupted run bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/loader.h"
#include "data/shard.h"
#include "model/init.h"
#include "tests/util/log_events.h"
#include "tests/util/test_util.h"
#include "train/checkpoint.h"
#include "train/spike_detector.h"
#include "train/spike_evidence.h"
#include "train/trainer.h"

using namespace sixnd;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

GPTConfig tiny() { return preset_config("tiny"); }

// A short random sequence repeated: learnable, so the loss falls smoothly and a clean run has
// no reason to spike.
std::string make_data(const std::string& dir) {
    const auto motif = test::random_ints(23, 7, 0, tiny().vocab_size);
    std::vector<uint32_t> u;
    for (int i = 0; i < 700; i++) u.insert(u.end(), motif.begin(), motif.end());
    const std::string path = dir + "/train.bin";
    write_shard(path, u);
    return path;
}

TrainOptions options(const std::string& dir, const std::string& data, const std::string& name) {
    TrainOptions o;
    o.device = "cpu";
    o.dtype = DType::f32;
    o.train_data = data;
    o.batch = 4;
    o.seq_len = 16;
    o.steps = 40;
    o.schedule.kind = ScheduleKind::constant;
    o.schedule.lr = 3e-3f;
    o.schedule.warmup = 2;
    o.grad_clip = 1.0f;
    o.out_dir = dir + "/" + name;
    o.log = dir + "/" + name + ".jsonl";
    o.keep_last = 0;
    o.progress = false;
    o.peak_tflops = 1;
    o.spike.detect.window = 8;
    return o;
}

std::vector<float> init_params() { return gpt2_init(ParamLayout(tiny()), tiny(), 9); }

std::vector<int> steps_of(const std::vector<json>& evs) {
    std::vector<int> s;
    for (const json& e : evs) s.push_back(e.at("step"));
    return s;
}

std::vector<char> file_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST(SpikeDetector, FiresOnlyOnceTheWindowIsFullAndOnlyUpwards) {
    SpikeDetector d({8, 6.0, 6.0});
    for (int i = 0; i < 7; i++) {
        EXPECT_FALSE(d.check(100.0, 100.0).fired()) << "warm-up: the window is not full";
        d.accept(1.0 + 0.01 * (i % 2), 1.0);
    }
    EXPECT_FALSE(d.check(100.0, 1.0).fired()) << "7 of 8 values";
    d.accept(1.0, 1.0);
    const SpikeVerdict up = d.check(100.0, 1.0);
    EXPECT_TRUE(up.loss.fired);
    EXPECT_FALSE(up.grad.fired);
    EXPECT_EQ(up.fired_on(), std::vector<std::string>{"loss"});
    EXPECT_FALSE(d.check(-100.0, 1.0).fired()) << "a drop is not a spike";
    EXPECT_TRUE(d.check(1.0, 50.0).grad.fired);
    EXPECT_FALSE(SpikeDetector({8, 0.0, 6.0}).check(100.0, 1.0).fired()) << "z 0 turns the loss off";
}

// Two spikes two steps apart are both caught because the first stays out of the window; had it
// entered, it would have widened the window's spread enough to hide the second.
TEST(SpikeDetector, OutliersStayOutOfTheStatistics) {
    SpikeDetector kept_out({16, 6.0, 6.0}), let_in({16, 6.0, 6.0});
    for (int i = 0; i < 16; i++) {
        const double v = 3.0 + 0.02 * std::sin(i);
        kept_out.accept(v, 1.0);
        let_in.accept(v, 1.0);
    }
    ASSERT_TRUE(kept_out.check(6.0, 1.0).fired());
    let_in.accept(6.0, 1.0);  // what a detector that keeps every value does
    kept_out.accept(3.01, 1.0);
    let_in.accept(3.01, 1.0);
    EXPECT_TRUE(kept_out.check(4.0, 1.0).fired());
    EXPECT_FALSE(let_in.check(4.0, 1.0).fired());
}

TEST(SpikeDetector, RestoredStateDecidesBitForBit) {
    SpikeDetector d({32, 6.0, 6.0});
    for (int i = 0; i < 50; i++) d.accept(2.0 + 1.0 / (i + 3.0), 0.5 + std::cos(i) / 7);
    SpikeDetector e({32, 6.0, 6.0});
    e.from_json(json::parse(d.to_json().dump()), "test");
    for (double x : {2.0, 2.3, 2.1234567891234, 9.0}) {
        const SpikeVerdict a = d.check(x, x / 3), b = e.check(x, x / 3);
        EXPECT_EQ(a.loss.z, b.loss.z);
        EXPECT_EQ(a.grad.z, b.grad.z);
        EXPECT_EQ(a.fired(), b.fired());
    }
}

// The loader's part in a rollback and a report: advance(n) lands where n next() calls would
// (across an epoch's end, shuffled), and each row served names the shard and offset of its tokens.
TEST(SpikeLoader, AdvanceAndRowSources) {
    test::TempDir t("sixnd_spike_");
    std::vector<uint32_t> a(100), b(60);
    for (size_t i = 0; i < a.size(); i++) a[i] = static_cast<uint32_t>(i % 50);
    for (size_t i = 0; i < b.size(); i++) b[i] = static_cast<uint32_t>(50 + i % 40);
    write_shard(t.dir + "/s_000.bin", a);
    write_shard(t.dir + "/s_001.bin", b);
    const int B = 2, T = 8;
    DataLoader walked(t.dir + "/s_*.bin", B, T, 1, 2, 1, true, 11), jumped(t.dir + "/s_*.bin", B, T, 1, 2, 1, true, 11);
    std::vector<int32_t> in(B * T), tg(B * T), in2(B * T), tg2(B * T);
    for (int i = 0; i < 7; i++) walked.next(in.data(), tg.data());
    jumped.advance(7);
    EXPECT_EQ(walked.state().epoch, jumped.state().epoch);
    EXPECT_EQ(walked.state().cursor, jumped.state().cursor);
    walked.next(in.data(), tg.data());
    jumped.next(in2.data(), tg2.data());
    EXPECT_EQ(in, in2);
    for (int r = 0; r < B; r++) {
        const RowSource src = walked.source_of(walked.last_samples()[static_cast<size_t>(r)]);
        const std::vector<uint32_t>& shard = src.shard == t.dir + "/s_000.bin" ? a : b;
        ASSERT_LT(src.offset, shard.size());
        EXPECT_EQ(static_cast<uint32_t>(in[static_cast<size_t>(r) * T]), shard[src.offset]) << src.shard << " " << src.offset;
    }
    EXPECT_EQ(walked.source_of(13).shard, t.dir + "/s_001.bin");  // tokens 104..: the second shard
    EXPECT_EQ(walked.source_of(13).offset, 4u);
}

// learning_rate: the phase follows the schedule, and lr_ratio is how far the rate at the step,
// or of the update before it (whose effect the spiking loss shows), stood above the schedule.
TEST(SpikeEvidence, LearningRateFields) {
    SpikeHistory h({8, 6.0, 6.0}, 4, 2);
    LrFacts f;
    f.base_lr = 1e-3;
    f.scheduled_lr = 1e-3;
    f.lr = 1e-3;
    f.schedule = "wsd";
    f.warmup = 10;
    f.step = 50;
    f.steps = 100;
    EXPECT_EQ(learning_rate_json(f, h).at("phase"), "constant");
    EXPECT_TRUE(learning_rate_json(f, h).at("last_update_lr").is_null());
    f.step = 5;
    EXPECT_EQ(learning_rate_json(f, h).at("phase"), "warmup");
    f.step = 95;
    f.scheduled_lr = f.lr = 4e-4;
    EXPECT_EQ(learning_rate_json(f, h).at("phase"), "decay");
    EXPECT_DOUBLE_EQ(learning_rate_json(f, h).at("lr_ratio"), 1.0);
    h.applied(20 * 4.1e-4, 4.1e-4, true);
    const json j = learning_rate_json(f, h);
    EXPECT_NEAR(j.at("lr_ratio").get<double>(), 20.0, 1e-9);
    EXPECT_DOUBLE_EQ(j.at("fraction_of_schedule"), 0.95);
}

// The same run with and without a planted fault: the clean run raises nothing, an LR spike is
// flagged on the step after it (its update shows in the next loss), a junk batch on its own
// step, and both of two faults close together are caught.
// A step rerun after a rollback can spike again: its report must not replace the first's.
TEST(SpikeEvidence, ReportsAfterARollbackAreNamedApart) {
    EXPECT_EQ(spike_report_path("o", 9, 0), "o/spikes/step-0000009.json");
    EXPECT_EQ(spike_report_path("o", 9, 1), "o/spikes/step-0000009-r1.json");
    EXPECT_EQ(spike_report_path("o", 1234567, 12), "o/spikes/step-1234567-r12.json");
}

TEST(SpikeTraining, PlantedSpikesAreFlaggedACleanRunIsNot) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    TrainOptions clean = options(t.dir, data, "clean");
    train(clean, tiny(), init_params());
    EXPECT_TRUE(test::log_events(clean.log, "spike").empty()) << "false alarm in a clean run";
    EXPECT_FALSE(fs::exists(clean.out_dir + "/spikes"));

    TrainOptions lr = options(t.dir, data, "lr");
    lr.spike.inject_lr = {20, 100.0, 1};
    train(lr, tiny(), init_params());
    const std::vector<int> lr_spikes = steps_of(test::log_events(lr.log, "spike"));
    ASSERT_FALSE(lr_spikes.empty());
    EXPECT_EQ(lr_spikes.front(), 21);
    EXPECT_TRUE(fs::exists(lr.out_dir + "/spikes/step-0000021.json"));

    TrainOptions two = options(t.dir, data, "two");
    two.spike.action = SpikeAction::skip;  // the junk batch leaves no trace in the weights
    two.max_bad_steps = 100;                // the LR spike's damage makes every later step spike
    two.spike.inject_junk_step = 20;
    two.spike.inject_lr = {22, 100.0, 1};
    train(two, tiny(), init_params());
    const std::vector<int> both = steps_of(test::log_events(two.log, "spike"));
    ASSERT_GE(both.size(), 2u);
    EXPECT_EQ(both[0], 20) << "the junk batch";
    EXPECT_EQ(both[1], 23) << "the LR spike, two steps later";
}

// --on-spike skip: the spiking step changes neither the parameters nor any byte of the optimizer
// state (master weights, moments), in FP32 and BF16, and the skip names the spike as its reason.
TEST(SpikeTraining, SkipLeavesTheStateBitwiseUnchanged) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    for (DType dt : {DType::f32, DType::bf16}) {
        TrainOptions o = options(t.dir, data, std::string("skip_") + dtype_name(dt));
        o.dtype = dt;
        o.steps = 26;
        o.checkpoint_every = 1;
        o.spike.action = SpikeAction::skip;
        o.spike.inject_junk_step = 24;
        TrainResult r = train(o, tiny(), init_params());
        EXPECT_EQ(r.losses.size(), 25u) << "one step skipped";
        const std::vector<json> skips = test::log_events(o.log, "skip");
        ASSERT_EQ(skips.size(), 1u);
        EXPECT_EQ(skips[0].at("step"), 24);
        EXPECT_EQ(skips[0].at("reason"), "spike");
        const std::string root = o.out_dir + "/checkpoints/";
        for (const char* f : {"params.bin", "optim-rank0.bin"}) {
            EXPECT_EQ(file_bytes(root + "step-00000023/" + f), file_bytes(root + "step-00000024/" + f)) << f << " " << dtype_name(dt);
            EXPECT_NE(file_bytes(root + "step-00000024/" + f), file_bytes(root + "step-00000025/" + f)) << f << " " << dtype_name(dt);
        }
        EXPECT_EQ(CheckpointReader(root + "step-00000024").meta().applied_steps, 23);
    }
}

// skip is for bad batches: after an LR spike the weights themselves are off, every step spikes,
// and the run stops after --max-bad-steps skips in a row, naming rollback.
TEST(SpikeTraining, SkipsThatGoOnStopTheRun) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    TrainOptions o = options(t.dir, data, "skips");
    o.spike.action = SpikeAction::skip;
    o.spike.inject_lr = {24, 300.0, 1};
    o.max_bad_steps = 3;
    try {
        train(o, tiny(), init_params());
        FAIL() << "expected the run to stop";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("3 consecutive steps"), std::string::npos) << msg;
        EXPECT_NE(msg.find("--on-spike rollback"), std::string::npos) << msg;
    }
    EXPECT_EQ(steps_of(test::log_events(o.log, "skip")), (std::vector<int>{25, 26, 27}));
    EXPECT_EQ(steps_of(test::log_events(o.log, "stop")), (std::vector<int>{27}));
    EXPECT_EQ(steps_of(test::log_events(o.log, "bill")), (std::vector<int>{27})) << "a run that stops early still has its bill";
}

// An LR spike x300 wrecks the weights. warn carries the damage to the end; rollback (to an
// in-memory snapshot, or to a checkpoint on disk) ends within ROLLBACK_TOL of the clean run.
TEST(SpikeTraining, RollbackRecoversWhereWarnDoesNot) {
    constexpr double ROLLBACK_TOL = 0.10;  // relative, final loss against the clean run
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    TrainOptions clean = options(t.dir, data, "clean");
    const float clean_loss = train(clean, tiny(), init_params()).last_loss;
    const double clean_peak = test::log_steps(clean.log).back().at("memory").at("peak");

    TrainOptions warn = options(t.dir, data, "warn");
    warn.spike.inject_lr = {24, 300.0, 1};
    const float warn_loss = train(warn, tiny(), init_params()).last_loss;
    std::printf("final loss: clean %.4f, warn %.4f\n", clean_loss, warn_loss);
    EXPECT_GT(warn_loss, clean_loss * 2) << "warn: the damage stays";

    for (bool memory : {true, false}) {
        TrainOptions rb = options(t.dir, data, memory ? "rb_memory" : "rb_disk");
        rb.spike.inject_lr = {24, 300.0, 1};
        rb.spike.action = SpikeAction::rollback;
        rb.spike.rollback_steps = 4;
        rb.spike.rollback_skip_batches = 3;
        if (memory) rb.spike.snapshot_every = 2;
        else rb.checkpoint_every = 5;
        TrainResult r = train(rb, tiny(), init_params());
        std::printf("final loss: rollback (%s) %.4f\n", memory ? "memory" : "disk", r.last_loss);
        EXPECT_EQ(r.rollbacks, 1);
        EXPECT_NEAR(r.last_loss, clean_loss, ROLLBACK_TOL * clean_loss) << (memory ? "memory" : "disk");
        const std::vector<json> rbs = test::log_events(rb.log, "rollback");
        ASSERT_EQ(rbs.size(), 1u);
        EXPECT_EQ(rbs[0].at("from"), 25);
        EXPECT_EQ(rbs[0].at("to"), memory ? 20 : 20);
        EXPECT_EQ(rbs[0].at("batches_skipped"), 25 - 20 + 3);
        EXPECT_EQ(steps_of(test::log_events(rb.log, "inject")), std::vector<int>{24}) << "the fault fires once";
        // Restoring from disk replaces the optimizer without holding two sets of its states.
        if (!memory) {
            EXPECT_EQ(test::log_steps(rb.log).back().at("memory").at("peak"), clean_peak);
        }
    }
}

// A rollback run stopped (with a checkpoint) after its rollback and resumed, or stopped before
// the spike and resumed, gives the uninterrupted run's losses bit for bit.
namespace {

// 36 steps with an injected x300 learning rate at step 25, rolled back 4 steps (2 batches
// skipped), with checkpoints every 10 steps and snapshots every 5: the rollback goes to step 20.
TrainOptions rollback_options(const std::string& dir, const std::string& data, const std::string& name) {
    TrainOptions o = options(dir, data, name);
    o.steps = 36;
    o.spike.inject_lr = {24, 300.0, 1};
    o.spike.action = SpikeAction::rollback;
    o.spike.rollback_steps = 4;
    o.spike.rollback_skip_batches = 2;
    o.checkpoint_every = 10;
    o.spike.snapshot_every = 5;
    return o;
}

}  // namespace

TEST(SpikeTraining, RollbackAndResumeReproduceTheUninterruptedRun) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    auto rollback_run = [&](const std::string& name) {
        TrainOptions o = rollback_options(t.dir, data, name);
        o.total_batch_tokens = 2 * 4 * 16;  // gradient accumulation too
        return o;
    };
    TrainOptions whole = rollback_run("whole");
    const TrainResult straight = train(whole, tiny(), init_params());
    ASSERT_EQ(straight.rollbacks, 1);
    for (int stop : {30, 20}) {
        TrainOptions o = rollback_run("stop" + std::to_string(stop));
        TrainOptions first = o;
        first.stop_at = stop;
        TrainResult a = train(first, tiny(), init_params());
        o.resume = "latest";
        TrainResult b = train(o, tiny(), init_params());
        std::vector<float> joined = a.losses;
        joined.insert(joined.end(), b.losses.begin(), b.losses.end());
        EXPECT_EQ(joined, straight.losses) << "stopped at " << stop;
        EXPECT_EQ(a.rollbacks + b.rollbacks, 1) << "stopped at " << stop;
        EXPECT_EQ(file_bytes(straight.last_checkpoint + "/params.bin"), file_bytes(b.last_checkpoint + "/params.bin"));
    }
}

// --keep-last 1 with checkpoints every 2 steps: the spike at step 25 rolls back to the checkpoint
// at 20 (no snapshots), as with every checkpoint kept. Pruning had left only step 24, too late
// for a rollback of 4 steps, and the spike was skipped.
TEST(SpikeTraining, KeepLastLeavesTheCheckpointARollbackNeeds) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    std::vector<TrainResult> results;
    for (int keep : {0, 1}) {
        TrainOptions o = rollback_options(t.dir, data, "keep" + std::to_string(keep));
        o.spike.snapshot_every = 0;
        o.checkpoint_every = 2;
        o.keep_last = keep;
        results.push_back(train(o, tiny(), init_params()));
        const std::vector<json> rbs = test::log_events(o.log, "rollback");
        ASSERT_EQ(rbs.size(), 1u) << "--keep-last " << keep;
        EXPECT_EQ(rbs[0].at("to"), 20) << "--keep-last " << keep;
    }
    EXPECT_EQ(results[0].losses, results[1].losses);
}

// A stop signal that arrives during the step that rolls back stops the run at the rollback's
// target step. The state there is not the one the process may have saved at that step (the
// loader now skips the batches around the spike, the injected fault has fired, one rollback is
// spent), so the checkpoint written then must be a new one: a resume from it gives the
// uninterrupted run's losses and weights bit for bit. The target here is both an in-memory
// snapshot and a checkpoint this process saved, the case where the old one had been reused.
TEST(SpikeTraining, ASignalDuringTheRollbackStepSavesTheRolledBackState) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    auto rollback_run = [&](const std::string& name) { return rollback_options(t.dir, data, name); };
    for (bool memory : {true, false}) {
        const std::string tag = memory ? "memory" : "disk";
        TrainOptions whole = rollback_run("whole_" + tag);
        if (!memory) whole.spike.snapshot_every = 0;
        const TrainResult straight = train(whole, tiny(), init_params());
        ASSERT_EQ(straight.rollbacks, 1) << tag;
        ASSERT_EQ(test::log_events(whole.log, "rollback").at(0).at("to"), 20) << tag;

        TrainOptions o = rollback_run("signal_" + tag);
        o.spike.snapshot_every = whole.spike.snapshot_every;
        TrainOptions first = o;
        bool sent = false;
        first.test_gradient_hook = [&sent](int step, void*, size_t) {
            if (step == 25 && !sent) {  // the spiking step: stop after it
                sent = true;
                std::raise(SIGTERM);
            }
        };
        std::vector<float> losses;
        try {
            train(first, tiny(), init_params());
            FAIL() << tag << ": the signal did not stop the run";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("after step 20"), std::string::npos) << tag << ": " << e.what();
        }
        for (const json& s : test::log_steps(first.log)) losses.push_back(s.at("loss").get<float>());
        o.resume = "latest";
        const TrainResult b = train(o, tiny(), init_params());
        // The first part logged steps 1-24 (the spiking 25th rolled back); the resumed run, as
        // the uninterrupted one, reruns from 21.
        std::vector<float> joined(losses.begin(), losses.end());
        joined.insert(joined.end(), b.losses.begin(), b.losses.end());
        EXPECT_EQ(joined, straight.losses) << tag;
        EXPECT_EQ(b.rollbacks, 0) << tag << ": the resumed run rolled back again";
        EXPECT_EQ(test::log_events(o.log, "inject").size(), 1u) << tag << ": the injected fault fired again after the resume";
        EXPECT_EQ(file_bytes(straight.last_checkpoint + "/params.bin"), file_bytes(b.last_checkpoint + "/params.bin")) << tag;
    }
}

// Resuming from an older checkpoint starts a new branch: every newer checkpoint of the run is
// the branch it leaves (README: "named at the start and deleted when the new branch saves its
// first checkpoint"), those between the resumed step and the first save included. Until then a
// rollback must not restore one of them, nor a report name one as the checkpoint before a spike.
TEST(SpikeTraining, ARunResumedFromAnOlderCheckpointNeverUsesTheBranchItLeft) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    TrainOptions o = options(t.dir, data, "branch");
    o.steps = 30;
    o.checkpoint_every = 10;
    TrainOptions first = o;
    first.stop_at = 15;
    train(first, tiny(), init_params());  // checkpoints 10 and 15 (the stop)
    TrainOptions second = o;
    second.resume = "latest";
    train(second, tiny(), init_params());  // 20 and 30
    const std::string root = o.out_dir + "/checkpoints/";
    ASSERT_TRUE(fs::exists(root + "step-00000015"));
    ASSERT_TRUE(fs::exists(root + "step-00000030"));

    // Back to step 10 with another learning rate; a spike at 19 rolls back at least 4 steps.
    TrainOptions again = o;
    again.resume = root + "step-00000010";
    again.schedule.lr = 1e-3f;
    again.spike.inject_lr = {18, 300.0, 1};
    again.spike.action = SpikeAction::rollback;
    again.spike.rollback_steps = 4;
    again.spike.rollback_skip_batches = 2;
    const TrainResult r = train(again, tiny(), init_params());
    ASSERT_EQ(r.rollbacks, 1);
    const std::vector<json> rbs = test::log_events(again.log, "rollback");
    ASSERT_EQ(rbs.size(), 1u);
    EXPECT_EQ(rbs[0].at("from"), 19);
    EXPECT_EQ(rbs[0].at("to"), 10) << "rolled back to the abandoned branch's step 15";
    const json report = json::parse(std::ifstream(o.out_dir + "/spikes/step-0000019.json"));
    EXPECT_EQ(report.at("run").at("checkpoint_before"), root + "step-00000010");
    std::vector<std::string> left;
    for (const CheckpointEntry& e : list_checkpoints(root)) left.push_back(fs::path(e.dir).filename().string());
    EXPECT_EQ(left, (std::vector<std::string>{"step-00000010", "step-00000020", "step-00000030"}))
        << "the left branch's step 15 survives the new branch's saves";
}

// A skipped step is evaluated when an evaluation is due: the weights it leaves are the run's, and
// a run whose last step is skipped reports their validation loss, not an earlier evaluation's.
TEST(SpikeTraining, ASkippedStepIsEvaluatedWhenAnEvaluationIsDue) {
    test::TempDir t("sixnd_spike_");
    const std::string data = make_data(t.dir);
    TrainOptions o = options(t.dir, data, "eval_skip");
    o.steps = 24;
    o.val_data = data;
    o.eval_every = 8;
    o.eval_batches = 2;
    o.spike.action = SpikeAction::skip;
    o.spike.inject_junk_step = 24;
    const TrainResult r = train(o, tiny(), init_params());
    ASSERT_EQ(r.skipped_at_end, 1);
    const std::vector<json> evals = test::log_events(o.log, "eval");
    EXPECT_EQ(steps_of(evals), (std::vector<int>{8, 16, 24}));
    ASSERT_FALSE(evals.empty());
    EXPECT_EQ(r.last_val_loss, evals.back().at("val_loss").get<float>()) << "the summary's validation loss is a stale one";
}
