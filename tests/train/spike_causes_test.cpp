// The ranking of a spike report's causes: each kind of planted evidence puts its own cause first,
// missing or malformed fields score 0 ("not measured") without throwing, and the list is sorted
// by score.
#include <gtest/gtest.h>

#include <set>

#include "model/config.h"
#include "train/spike_causes.h"
#include "train/trainer.h"

namespace sixnd {
namespace {

using nlohmann::json;

// An ordinary step: nothing stands out (LR on schedule, the batch at its usual loss, attention
// steady, optimizer state healthy, the re-check bitwise equal).
json ordinary() {
    json rows = json::array();
    for (int i = 0; i < 8; i++)
        rows.push_back({{"rank", 0}, {"micro", 0}, {"row", i}, {"shard", "data/train_000.bin"}, {"offset", 1000 * i},
                        {"loss", 3.0 + 0.02 * (i % 3)}, {"max_token_loss", 7.0}});
    json units = json::array();
    for (const char* u : {"embeddings", "h.0", "h.1", "ln_f"})
        units.push_back({{"unit", u}, {"grad_norm", 0.5}, {"grad_norm_mean", 0.48}, {"grad_ratio", 1.04},
                         {"adam_v_min", 1e-10}, {"adam_v_max", 1e-3}, {"update_ratio", 1e-3}});
    return {{"step", 400},
            {"action", "warn"},
            {"run", {{"out", "runs/a"}, {"train_data", "data/train_*.bin"}, {"seq_len", 64}, {"batch", 8}, {"world", 1},
                     {"accum", 1}, {"checkpoint_before", "runs/a/checkpoints/step-00000300"},
                     {"checkpoint_earlier", "runs/a/checkpoints/step-00000200"}}},
            {"trigger", {{"fired_on", {"loss"}}, {"loss", 3.03}, {"loss_mean", 3.0}, {"loss_std", 0.05}, {"loss_z", 0.6},
                         {"grad_norm", 1.0}, {"grad_mean", 1.0}, {"grad_std", 0.1}, {"grad_z", 0.0}, {"window", 128},
                         {"z_loss", 6}, {"z_grad", 6}}},
            {"learning_rate", {{"lr", 1e-3}, {"scheduled_lr", 1e-3}, {"base_lr", 1e-3}, {"schedule", "cosine"}, {"warmup", 100},
                               {"phase", "decay"}, {"fraction_of_schedule", 0.4}, {"recent_mean_lr", 1.02e-3},
                               {"injected", false}}},
            {"attention_logits", {{"max_per_layer", {8.0, 9.5}}, {"mean_per_layer", {7.9, 9.2}}, {"max_ratio", 1.03}}},
            {"units", units},
            {"batch", {{"seq_len", 64}, {"rows", rows}, {"loss", 3.02}, {"recent_loss_mean", 3.0}, {"per_token_loss_max", 7.0},
                       {"injected_junk", false}}},
            {"determinism", {{"loss", 3.02}, {"loss_again", 3.02}, {"bitwise_equal", true}}}};
}

std::string first(const json& causes) { return causes.at(0).at("cause").get<std::string>(); }

const json& cause(const json& causes, const std::string& name) {
    for (const json& c : causes)
        if (c["cause"] == name) return c;
    throw std::runtime_error("no cause " + name);
}

TEST(SpikeCauses, FiveCausesEachWithScoreEvidenceAndNext) {
    const json c = rank_spike_causes(ordinary());
    ASSERT_EQ(c.size(), 5u);
    std::set<std::string> names;
    for (const json& x : c) {
        names.insert(x.at("cause").get<std::string>());
        EXPECT_TRUE(x.at("score").is_number());
        EXPECT_FALSE(x.at("evidence").get<std::string>().empty());
        EXPECT_EQ(x.at("next").get<std::string>().rfind("sixnd ", 0), 0u) << x.dump();
    }
    EXPECT_EQ(names, (std::set<std::string>{"attention_logits", "learning_rate", "data_state", "optimizer_state",
                                            "hardware_nondeterminism"}));
    // Nothing stands out in an ordinary step: no cause earns much.
    for (const json& x : c) EXPECT_LT(x["score"].get<double>(), 0.2) << x.dump();
}

TEST(SpikeCauses, InjectedLrSpikeRanksLearningRateFirst) {
    json r = ordinary();
    r["learning_rate"]["lr"] = 1e-2;
    r["learning_rate"]["injected"] = true;
    r["batch"]["loss"] = 6.5;  // the loss follows the LR up
    const json c = rank_spike_causes(r);
    EXPECT_EQ(first(c), "learning_rate") << c.dump(1);
    EXPECT_NE(cause(c, "learning_rate")["evidence"].get<std::string>().find("10x the schedule"), std::string::npos);
    // Off the schedule alone, without the injected flag, is as telling.
    r["learning_rate"]["injected"] = false;
    EXPECT_EQ(first(rank_spike_causes(r)), "learning_rate");
}

TEST(SpikeCauses, JunkBatchRanksDataStateFirst) {
    json r = ordinary();
    r["batch"]["injected_junk"] = true;
    r["batch"]["loss"] = 5.8;
    EXPECT_EQ(first(rank_spike_causes(r)), "data_state");
    // Without the flag: two of eight rows carry the whole excess.
    r["batch"]["injected_junk"] = false;
    r["batch"]["rows"][2]["loss"] = 12.0;
    r["batch"]["rows"][5]["loss"] = 11.0;
    r["batch"]["loss"] = 5.3;
    const json c = rank_spike_causes(r);
    EXPECT_EQ(first(c), "data_state") << c.dump(1);
    const std::string ev = cause(c, "data_state")["evidence"];
    EXPECT_NE(ev.find("top 2 of 8 rows"), std::string::npos) << ev;
    EXPECT_NE(ev.find("data/train_000.bin@2000 loss 12"), std::string::npos) << ev;
    EXPECT_EQ(cause(c, "data_state")["next"],
              "sixnd replay --checkpoint runs/a/checkpoints/step-00000300 --spike-report runs/a/spikes/step-0000400.json "
              "--train-data 'data/train_*.bin' --earlier-checkpoint runs/a/checkpoints/step-00000200");
}

TEST(SpikeCauses, DataStateScoreFollowsTheStatedRule) {
    // The header's rule by hand: a batch 1.1x its recent mean, all the excess in one of eight rows
    // (concentration 1): 0.8 * 0.1 / 1.5 + 0.2 * 1 * 0.1 / 0.5 = 0.0933.
    json r = ordinary();
    for (json& row : r["batch"]["rows"]) row["loss"] = 3.0;
    r["batch"]["rows"][2]["loss"] = 5.4;
    r["batch"]["loss"] = 3.3;
    EXPECT_DOUBLE_EQ(cause(rank_spike_causes(r), "data_state")["score"].get<double>(), 0.093);
}

TEST(SpikeCauses, NondeterministicRecheckRanksHardwareFirst) {
    json r = ordinary();
    r["batch"]["loss"] = 4.0;  // a spike, but the same batch gives another loss on the same weights
    r["determinism"] = {{"loss", 4.0}, {"loss_again", 3.9}, {"bitwise_equal", false}};
    const json c = rank_spike_causes(r);
    EXPECT_EQ(first(c), "hardware_nondeterminism") << c.dump(1);
    EXPECT_NE(c[0]["evidence"].get<std::string>().find("NOT bitwise equal"), std::string::npos);
}

TEST(SpikeCauses, LargeAttentionRatioRanksAttentionFirst) {
    json r = ordinary();
    r["attention_logits"] = {{"max_per_layer", {9.0, 85.0}}, {"mean_per_layer", {8.8, 20.0}}, {"max_ratio", 4.25}};
    r["batch"]["loss"] = 4.0;
    const json c = rank_spike_causes(r);
    EXPECT_EQ(first(c), "attention_logits") << c.dump(1);
    EXPECT_NE(c[0]["evidence"].get<std::string>().find("layer 1"), std::string::npos);
    EXPECT_NE(c[0]["next"].get<std::string>().find("--qk-norm on"), std::string::npos);
}

TEST(SpikeCauses, CollapsedSecondMomentUnderALargeGradientRanksOptimizerFirst) {
    json r = ordinary();
    r["units"][2] = {{"unit", "h.1"}, {"grad_norm", 4.0}, {"grad_norm_mean", 0.5}, {"grad_ratio", 8.0}, {"adam_v_min", 0.0},
                     {"adam_v_max", 1e-3}, {"update_ratio", 0.2}};
    // A collapsed moment alone (the embeddings' padded rows always have v = 0) is no evidence.
    r["units"][0]["adam_v_min"] = 0.0;
    const json c = rank_spike_causes(r);
    EXPECT_EQ(first(c), "optimizer_state") << c.dump(1);
    EXPECT_NE(c[0]["evidence"].get<std::string>().find("unit h.1"), std::string::npos);
}

TEST(SpikeCauses, MissingFieldsScoreZeroNotMeasured) {
    for (const char* drop : {"learning_rate", "attention_logits", "batch", "units", "determinism"}) {
        json r = ordinary();
        r.erase(drop);
        const json c = rank_spike_causes(r);
        ASSERT_EQ(c.size(), 5u);
        const std::string name = std::string(drop) == "batch" ? "data_state"
                                 : std::string(drop) == "units" ? "optimizer_state"
                                 : std::string(drop) == "determinism" ? "hardware_nondeterminism"
                                                                      : drop;
        EXPECT_EQ(cause(c, name)["score"], 0.0) << drop;
        EXPECT_EQ(cause(c, name)["evidence"], "not measured") << drop;
        r[drop] = nullptr;  // null is the same as missing
        EXPECT_EQ(cause(rank_spike_causes(r), name)["evidence"], "not measured") << drop;
    }
    // Nothing at all, wrong types everywhere, or not even an object: no throw, five causes.
    for (const json& r : {json::object(), json::array(), json(3),
                          json{{"step", "x"}, {"run", 5}, {"learning_rate", {{"lr", "high"}}}, {"batch", {{"rows", 7}}},
                               {"units", {1, {{"adam_v_min", "0"}}}}, {"determinism", {{"bitwise_equal", 1}}}}}) {
        json c;
        ASSERT_NO_THROW(c = rank_spike_causes(r)) << r.dump();
        ASSERT_EQ(c.size(), 5u);
        for (const json& x : c) {
            EXPECT_EQ(x["score"], 0.0) << r.dump() << x.dump();
            EXPECT_EQ(x["evidence"], "not measured") << r.dump() << x.dump();
            EXPECT_EQ(x["next"].get<std::string>().rfind("sixnd ", 0), 0u);
        }
        EXPECT_NO_THROW(spike_report_text(r));
    }
    // Without the run object the commands carry placeholders.
    json r = ordinary();
    r.erase("run");
    EXPECT_NE(cause(rank_spike_causes(r), "data_state")["next"].get<std::string>().find("<CHECKPOINT_BEFORE_THE_SPIKE>"),
              std::string::npos);
}

TEST(SpikeCauses, RankedByScore) {
    // Several causes with evidence at once: the order follows the scores, whatever they are.
    json r = ordinary();
    r["attention_logits"]["max_ratio"] = 2.0;
    r["learning_rate"]["recent_mean_lr"] = 3e-4;
    r["batch"]["loss"] = 4.5;
    const json c = rank_spike_causes(r);
    for (size_t i = 1; i < c.size(); i++) EXPECT_GE(c[i - 1]["score"].get<double>(), c[i]["score"].get<double>()) << c.dump(1);
    EXPECT_GT(c[0]["score"].get<double>(), c[1]["score"].get<double>());
    EXPECT_GT(c[2]["score"].get<double>(), 0.0);
}

TEST(SpikeCauses, WarmupEndAddsToTheLearningRate) {
    json r = ordinary();
    const double before = cause(rank_spike_causes(r), "learning_rate")["score"];
    r["step"] = 105;  // warm-up 100: the LR at its peak
    const double at_peak = cause(rank_spike_causes(r), "learning_rate")["score"];
    EXPECT_NEAR(at_peak - before, 0.2, 1e-9);
}

TEST(SpikeCauses, TextNamesTheStepTheTriggerAndTheRankedCauses) {
    json r = ordinary();
    r["batch"]["injected_junk"] = true;
    const std::string t = spike_report_text(r);
    EXPECT_NE(t.find("Loss spike at step 400 (action: warn), fired on loss"), std::string::npos) << t;
    EXPECT_NE(t.find("junk injected"), std::string::npos) << t;
    EXPECT_NE(t.find("1. data_state"), std::string::npos) << t;
    EXPECT_NE(t.find("next: sixnd replay"), std::string::npos) << t;
    // The report's own "causes" list is used when present.
    r["causes"] = json::array({{{"cause", "learning_rate"}, {"score", 0.5}, {"evidence", "given"}, {"next", "sixnd x"}}});
    EXPECT_NE(spike_report_text(r).find("1. learning_rate"), std::string::npos);
}

// The number of times `word` stands as a word of `cmd`.
int count_word(const std::string& cmd, const std::string& word) {
    int n = 0;
    for (size_t at = 0; (at = cmd.find(" " + word + " ", at)) != std::string::npos; at++) n++;
    return n;
}

// The commands carry the run's whole configuration, from the report's run record: its schedule,
// precision, data and evaluation flags, only the knob under test changed.
TEST(SpikeCauses, NextCommandsCarryTheRunsConfiguration) {
    const std::string dir = "/runs/spiky";
    const std::string ck = dir + "/checkpoints/step-00000300";
    TrainOptions o;
    o.train_data = "data/train_*.bin";
    o.val_data = "data/val.bin";
    o.tokenizer = "tok.bin";
    o.steps = 500;
    o.dtype = DType::bf16;
    o.seed = 7;
    o.schedule.lr = 1e-3f;
    o.schedule.warmup = 100;
    o.optimizer.beta2 = 0.99f;
    o.out_dir = dir;
    json r = ordinary();
    r["run"]["checkpoint_before"] = ck;
    r["run"]["config"] = o.to_json();
    r["run"]["model"] = preset_config("tiny", 256).to_json();
    const json c = rank_spike_causes(r);
    for (const char* name : {"learning_rate", "optimizer_state"}) {
        const std::string cmd = cause(c, name)["next"];
        for (const char* want : {"sixnd train --resume " , " --steps 500 ", " --dtype bf16 ", " --schedule cosine ",
                                 " --val-data data/val.bin ", " --tokenizer tok.bin ", " --seed 7 ", " --warmup "})
            EXPECT_NE((cmd + " ").find(want), std::string::npos) << want << " in " << cmd;
        for (const char* flag : {"--lr", "--warmup", "--eps", "--beta2", "--out"}) EXPECT_LE(count_word(cmd + " ", flag), 1) << cmd;
    }
    const std::string lr = cause(c, "learning_rate")["next"];
    EXPECT_NE(lr.find(" --lr 0.0005 "), std::string::npos) << lr;
    EXPECT_NE(lr.find(" --warmup 200 "), std::string::npos) << lr;
    // The run's beta2 of 0.99 is shortened; eps grows to 1e-6.
    const std::string opt = cause(c, "optimizer_state")["next"];
    EXPECT_NE(opt.find(" --eps 1e-06 "), std::string::npos) << opt;
    EXPECT_NE(opt.find(" --beta2 0.95 "), std::string::npos) << opt;
    // A run that already had beta2 0.95 keeps it; only eps changes.
    o.optimizer.beta2 = 0.95f;
    o.optimizer.eps = 1e-6f;
    r["run"]["config"] = o.to_json();
    const std::string kept = cause(rank_spike_causes(r), "optimizer_state")["next"];
    EXPECT_NE(kept.find(" --beta2 0.95 "), std::string::npos) << kept;
    EXPECT_NE(kept.find(" --eps 1e-05 "), std::string::npos) << kept;
    EXPECT_EQ(count_word(kept + " ", "--beta2"), 1) << kept;
    // qk-norm needs a fresh run of the same model: every shape flag, qk-norm on, once.
    const std::string qk = cause(c, "attention_logits")["next"];
    for (const char* want : {" --init random ", " --n-layer 2 ", " --vocab-size 256 ", " --qk-norm on ", " --steps 500 "})
        EXPECT_NE((qk + " ").find(want), std::string::npos) << want << " in " << qk;
    EXPECT_EQ(count_word(qk + " ", "--qk-norm"), 1) << qk;
    EXPECT_EQ(qk.find("--resume"), std::string::npos) << qk;
}

TEST(SpikeCauses, NextCommandsCarryADoubleOptionWhole) {
    // The spike thresholds are doubles: read back as floats, 6.0000001 was written as 6.
    TrainOptions o;
    o.train_data = "data/train.bin";
    o.spike.detect.z_loss = 6.0000001;
    o.schedule.lr = 3e-3f;
    json r = ordinary();
    r["run"]["config"] = o.to_json();
    r["run"]["model"] = preset_config("tiny", 256).to_json();
    const std::string cmd = cause(rank_spike_causes(r), "optimizer_state")["next"];
    EXPECT_NE(cmd.find(" --spike-z-loss 6.0000001 "), std::string::npos) << cmd;
    EXPECT_NE(cmd.find(" --spike-z-grad 6 "), std::string::npos) << cmd;
    EXPECT_NE(cmd.find(" --lr 0.003 "), std::string::npos) << cmd;
}

}  // namespace
}  // namespace sixnd
