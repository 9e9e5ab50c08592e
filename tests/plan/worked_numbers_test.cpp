// The numbers practitioners check a planner against, to the digits they are quoted with.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "plan/devices.h"
#include "plan/memory.h"
#include "plan/planner.h"
#include "plan/scaling.h"

namespace sixnd::plan {
namespace {

std::string sig(double v, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*g", digits, v);
    return b;
}

double get(const Report& r, const std::string& section, const std::string& key) {
    return r.to_json().at(section).at(key).get<double>();
}

TEST(WorkedNumbers, Llama3_405B) {
    EXPECT_EQ(sig(training_flops(405e9, 15.6e12), 3), "3.79e+25");  // published 3.8e25
    PlanInputs in;
    in.params = 405e9;
    in.tokens = 15.6e12;
    EXPECT_EQ(sig(get(make_plan(in), "compute", "flops"), 3), "3.79e+25");
}

TEST(WorkedNumbers, Chinchilla70B) {
    const double C = training_flops(70e9, 1.4e12);
    EXPECT_EQ(sig(C, 3), "5.88e+23");
    EXPECT_EQ(sig(chinchilla_params(5.88e23), 3), "7e+10");
    PlanInputs in;
    in.flops = 5.88e23;
    const Report r = make_plan(in);
    EXPECT_EQ(sig(get(r, "compute", "params"), 3), "7e+10");
    EXPECT_EQ(sig(get(r, "compute", "tokens"), 3), "1.4e+12");
}

TEST(WorkedNumbers, SevenBModelStates) {
    const StateBytes s = model_state_bytes(layout_from_count(7e9), 0, 1, 2, true);
    EXPECT_EQ(s.total(), 112e9);
    PlanInputs in;
    in.params = 7e9;
    EXPECT_EQ(get(make_plan(in), "memory", "model_states"), 112e9);
    EXPECT_EQ(get(make_plan(in), "memory", "zero0_bytes_per_param"), 16);
    // The other stages on 8 ranks: 4 + 12/8 and 2 + 14/8 and 16/8 bytes per parameter.
    EXPECT_DOUBLE_EQ(model_state_bytes(layout_from_count(7e9), 1, 8, 2, true).total(), 7e9 * 5.5);
    EXPECT_DOUBLE_EQ(model_state_bytes(layout_from_count(7e9), 2, 8, 2, true).total(), 7e9 * 3.75);
    EXPECT_DOUBLE_EQ(model_state_bytes(layout_from_count(7e9), 3, 8, 2, true).total(), 7e9 * 2);
}

TEST(WorkedNumbers, PipelineBubble) {
    EXPECT_DOUBLE_EQ(pipeline_bubble(4, 4), 3.0 / 7);
    EXPECT_DOUBLE_EQ(pipeline_bubble(4, 32), 3.0 / 35);
    PlanInputs in;
    in.params = 1e9;
    in.pipeline_stages = 4;
    in.micro_batches = 32;
    EXPECT_DOUBLE_EQ(get(make_plan(in), "pipeline", "bubble"), 3.0 / 35);
    EXPECT_DOUBLE_EQ(get(make_plan(in), "pipeline", "mfu_ceiling"), 32.0 / 35);
}

TEST(WorkedNumbers, H100Ridge) {
    const DeviceSpec* h100 = find_device("h100");
    ASSERT_NE(h100, nullptr);
    EXPECT_EQ(sig(ridge_point(h100->peak_flops, h100->mem_bw), 3), "295");
    EXPECT_EQ(find_device("NVIDIA H100 80GB HBM3"), h100);
    EXPECT_EQ(find_device("h200")->mem_bw, 4.8e12);
    EXPECT_EQ(find_device("A100")->peak_flops, 312e12);
    EXPECT_EQ(find_device("NVIDIA A100-SXM4-40GB")->mem_bw, 1.555e12);
    EXPECT_EQ(find_device("b200")->peak_flops, 2.25e15);
    EXPECT_EQ(find_device("tpu"), nullptr);
}

TEST(WorkedNumbers, TokensPerParam) {
    PlanInputs in;
    in.params = 8e9;
    in.tokens = 15e12;
    EXPECT_EQ(sig(get(make_plan(in), "compute", "tokens_per_param"), 4), "1875");
    in.params = 175e9;
    in.tokens = 300e9;
    const Report r = make_plan(in);
    EXPECT_EQ(sig(get(r, "compute", "tokens_per_param"), 2), "1.7");
    EXPECT_EQ(sig(get(r, "compute", "vs_chinchilla_20"), 2), "0.086");
}

TEST(WorkedNumbers, Interruptions) {
    const Interruptions it = expected_interruptions(16000, 54);
    EXPECT_NEAR(it.expected, 419, 1e-9);
    EXPECT_EQ(sig(it.mtbf_s / 3600, 2), "3.1");  // one every ~3 hours
    // Half the GPUs for the same time: half the interruptions, twice the MTBF.
    EXPECT_NEAR(expected_interruptions(8000, 54).expected, 209.5, 1e-9);
    EXPECT_NEAR(expected_interruptions(8000, 54).mtbf_s, 2 * it.mtbf_s, 1e-6);
}

TEST(WorkedNumbers, YoungDaly) {
    EXPECT_DOUBLE_EQ(young_daly_interval(60, 3 * 3600), std::sqrt(2.0 * 60 * 3 * 3600));
    PlanInputs in;
    in.params = 405e9;
    in.tokens = 15.6e12;
    in.device = *find_device("h100");
    in.devices = 16000;
    in.mfu = 0.4;
    in.checkpoint_write_s = 60;
    const Report r = make_plan(in);
    const double mtbf = get(r, "reliability", "mtbf_s");
    EXPECT_NEAR(mtbf, 54.0 * 86400 / 419, 1e-6);
    EXPECT_DOUBLE_EQ(get(r, "reliability", "checkpoint_interval_s"), std::sqrt(2 * 60 * mtbf));
    // 3.79e25 / (16000 x 989e12 x 0.4) s
    EXPECT_NEAR(get(r, "time", "seconds"), 3.7908e25 / (16000 * 989e12 * 0.4), 1);
}

// sixnd's checkpoint: rank 0 writes every parameter and its optimizer file, its ZeRO shard of
// master, m and v; the other ranks write their shards beside it.
TEST(WorkedNumbers, CheckpointWriteIsRankZerosFiles) {
    PlanInputs in;
    in.params = 1e9;
    in.tokens = 1e10;
    in.device = *find_device("h100");
    in.devices = 64;
    in.mfu = 0.4;
    auto write_s = [&](int zero) {
        in.zero_stage = zero;
        return get(make_plan(in), "reliability", "checkpoint_write_s");
    };
    EXPECT_DOUBLE_EQ(write_s(0), 14e9 / 2e9);                // every rank holds all of master, m, v
    EXPECT_DOUBLE_EQ(write_s(1), (2 + 12.0 / 64) * 1e9 / 2e9);  // the parameters whole, the rest a shard
    EXPECT_DOUBLE_EQ(write_s(3), (2 + 12.0 / 64) * 1e9 / 2e9);
    // Four pipeline stages of 16 ranks: each stage's rank 0 writes a quarter of the model.
    in.pipeline_stages = 4;
    in.micro_batches = 8;
    EXPECT_DOUBLE_EQ(write_s(1), (2 + 12.0 / 16) * 0.25e9 / 2e9);
}

TEST(WorkedNumbers, Serving) {
    PlanInputs in;
    in.params = 7e9;
    in.device = *find_device("h100");
    in.price_per_device_hour = 2;
    const Report r = make_plan(in);
    EXPECT_DOUBLE_EQ(get(r, "serving", "decode_tokens_per_s"), 3.35e12 / 14e9);
    EXPECT_DOUBLE_EQ(get(r, "serving", "dollars_per_million_tokens"), 2.0 / 3600 / (3.35e12 / 14e9) * 1e6);
}

TEST(WorkedNumbers, TradeoffHoldsLossAndCostsLessWhenServingDominates) {
    PlanInputs in;
    in.flops = 1e22;
    in.device = *find_device("h100");
    in.devices = 64;
    in.mfu = 0.4;
    in.serve_tokens = 1e13;
    in.price_per_device_hour = 2;
    const nlohmann::json j = make_plan(in).to_json().at("tradeoff");
    const double loss = j.at("iso_loss");
    EXPECT_NEAR(chinchilla_loss(j.at("option0_params"), j.at("option0_tokens")), loss, 1e-9);
    EXPECT_NEAR(chinchilla_loss(j.at("option2_params"), j.at("option2_tokens")), loss, 1e-9);
    EXPECT_GT(j.at("option2_tokens_per_param").get<double>(), 20);
    EXPECT_LT(j.at("option2_total_dollars").get<double>(), j.at("option0_total_dollars").get<double>());
}

TEST(WorkedNumbers, DevicesDaysMfuGiveTheBudget) {
    PlanInputs in;
    in.device = *find_device("h100");
    in.devices = 1000;
    in.days = 10;
    in.mfu = 0.5;
    const Report r = make_plan(in);
    EXPECT_DOUBLE_EQ(get(r, "compute", "flops"), 1000 * 10 * 86400 * 989e12 * 0.5);
    EXPECT_NEAR(get(r, "time", "seconds"), 10 * 86400, 1e-3);
}

struct BadCase {
    const char* name;
    PlanInputs in;
    std::string words;
};

TEST(PlanErrors, InconsistentOrIncompleteInputsNameWhatIsWrong) {
    auto h100 = *find_device("h100");
    std::vector<BadCase> cases;
    cases.push_back({"nothing", PlanInputs{}, "nothing to plan"});
    PlanInputs a; a.params = 1e9; a.tokens = 2e10; a.flops = 5e20;
    cases.push_back({"over-determined", a, "give two of"});
    PlanInputs b; b.devices = 8; b.days = 1; b.mfu = 0.4;
    cases.push_back({"no device", b, "--device"});
    PlanInputs c; c.device = h100; c.days = 3; c.mfu = 0.4;
    cases.push_back({"days without devices", c, "--devices"});
    PlanInputs d; d.tokens_per_param = 20;
    cases.push_back({"ratio alone", d, "--tokens-per-param"});
    PlanInputs e; e.params = 1e9; e.pipeline_stages = 4;
    cases.push_back({"pipeline without micro-batches", e, "--micro-batches"});
    PlanInputs f; f.flops = 1e21; f.device = h100; f.devices = 8; f.days = 1; f.mfu = 0.4;
    cases.push_back({"two budgets", f, "one compute budget"});
    PlanInputs g; g.params = 1e9; g.tokens = 1e10; g.tokens_per_param = 20;
    cases.push_back({"ratio over-determined", g, "over-determined"});
    PlanInputs h; h.params = 1e9; h.batch = 8;
    cases.push_back({"batch without a shape", h, "--model"});
    PlanInputs i; i.params = 1e9; i.serve_tokens = 1e9;
    cases.push_back({"serving without a device", i, "--device"});
    PlanInputs k; k.params = 1e9; k.device = h100; k.devices = 8; k.mfu = 1.5;
    cases.push_back({"mfu over 1", k, "--mfu"});
    PlanInputs l; l.params = 1e9; l.device = h100; l.devices = 8; l.ranks = 4;
    cases.push_back({"ranks not the devices", l, "--ranks"});
    PlanInputs m; m.params = 1e9; m.device = h100; m.devices = 6; m.pipeline_stages = 4; m.micro_batches = 8;
    cases.push_back({"devices not a multiple of the stages", m, "4 pipeline stages"});
    ModelInfo twelve;
    twelve.n_layer = 12;
    twelve.params = twelve.matmul_params = 1e8;
    PlanInputs n; n.model = twelve; n.pipeline_stages = 40; n.micro_batches = 8;
    cases.push_back({"more stages than layers", n, "12 layers"});
    // Budgets and ratios that buy less than one parameter or one token.
    PlanInputs o; o.flops = 100;
    cases.push_back({"a budget below one parameter", o, "N = 0.9129 parameters"});
    PlanInputs q; q.flops = 1e3; q.model = twelve;
    cases.push_back({"a budget below one token of the model", q, "D = 1.667e-06 tokens"});
    PlanInputs t; t.params = 1e9; t.tokens_per_param = 1e-12;
    cases.push_back({"a ratio below one token", t, "at least one of each"});
    for (const auto& bc : cases) {
        try {
            make_plan(bc.in);
            ADD_FAILURE() << bc.name << ": no error";
        } catch (const Error& err) {
            const std::string msg = err.what();
            EXPECT_NE(msg.find(bc.words), std::string::npos) << bc.name << ": " << msg;
            EXPECT_EQ(msg.find('\n'), std::string::npos) << bc.name;
        }
    }
}

TEST(PlanMemory, ActivationsShrinkWithRecompute) {
    const ActivationShape s{12, 12, 768, 50304, true};
    const double none = activation_bytes(s, 4, 1024, Recompute::none, 2).activations;
    const double sel = activation_bytes(s, 4, 1024, Recompute::selective, 2).activations;
    const double full = activation_bytes(s, 4, 1024, Recompute::full, 2).activations;
    EXPECT_GT(none, sel);
    EXPECT_GT(sel, full);
    // selective drops 6 C e per token in 11 of 12 layers
    EXPECT_DOUBLE_EQ(none - sel, 11.0 * 4 * 1024 * 6 * 768 * 2);
}

// A GPT-2 of 4 layers at C = 8, 2 heads, Vp = 128, context 16, its units padded to 64:
// embeddings wte 128 x 8 + wpe 16 x 8 = 1152; a block ln_1 16, c_attn 24 x 8 + 24, c_proj
// 8 x 8 + 8, ln_2 16, c_fc 32 x 8 + 32, c_proj 8 x 32 + 8 = 872 -> 896; ln_f 16 -> 64; the head
// [128, 8] alone 1024.
ModelInfo four_layers() {
    ModelInfo m;
    m.name = "four layers";
    m.n_layer = 4, m.n_head = 2, m.n_embd = 8, m.vocab = 128, m.padded_vocab = 128, m.max_seq_len = 16;
    m.layout.units = {1152, 896, 896, 896, 896, 64};
    m.layout.total = 4800;
    m.params = m.matmul_params = 4800;
    m.first_stage_unit = 1152;
    m.head_unit = 1024;
    return m;
}

// Per token at B 1, T 16 (N = 16 tokens), bf16 (e = 2), no recompute, flash, in bytes:
//   a layer's kept tensors: qkv 24 + attention output 8 + residual 8 + fc 32 = 72 x 2 = 144,
//     layernorm statistics 2 x 2 floats = 16, attention statistics 2 floats = 8: 168; ln_1,
//     ln_2 and post-GELU (8 + 8 + 32) x 2 = 96: 264; its attention row maxima 2 floats = 8
//   the stream: (layers + 1) x 8 x 2;  input ids 4 (first stage)
//   the head (last stage): targets 4, ln_f 16, its statistics 8, logits 128 x 2, loss 4 = 288
//   shared by the micro-batches: the projection output 8 x 2 = 16
//   backward workspace (2 x 8 + 32 + 24) x 2 = 144, i.e. 2304 for the micro-batch.
// Model states at ZeRO 0, bf16 with master weights: 16 bytes per element of the stage's units.
TEST(PlanMemory, PipelineStagesHoldTheirOwnUnitsAndMicroBatches) {
    PlanInputs in;
    in.model = four_layers();
    in.tokens = 1e6;
    in.batch = 1;
    in.seq_len = 16;
    in.pipeline_stages = 2;
    in.micro_batches = 4;
    DeviceSpec small = *find_device("h100");
    small.mem_bytes = 100000;
    in.device = small;
    // Without a pipeline: 4800 x 16 = 76800 bytes of states; activations per token
    // 4 x 272 + 5 x 16 + 4 + 288 + 16 = 1476, x 16 = 23616.
    {
        PlanInputs one = in;
        one.pipeline_stages = 1;
        one.micro_batches = 0;
        const Report r = make_plan(one);
        EXPECT_DOUBLE_EQ(get(r, "memory", "model_states"), 76800);
        EXPECT_DOUBLE_EQ(get(r, "memory", "activations"), 23616);
        EXPECT_DOUBLE_EQ(get(r, "memory", "total"), 76800 + 23616 + 2304);
    }
    // 1F1B on 2 stages of 2 layers:
    //   stage 0: embeddings + h.0-1 = 1152 + 2 x 896 = 2944 elements, 47104 bytes; 2 micro-batches
    //            of 2 x 272 + 3 x 16 + 4 = 596 per token, + 16: 16 x 1208 = 19328; total 68736
    //   stage 1: h.2-3 + ln_f + the head's own copy = 2 x 896 + 64 + 1024 = 2880, 46080 bytes; 1
    //            micro-batch of 2 x 272 + 3 x 16 + 288 = 880, + 16: 16 x 896 = 14336; total 62720
    // (An even split of the whole model's would have said 38400 + 11808 + 2304 = 52512 each.)
    const Report r = make_plan(in);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage0_layers"), 2);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage0_model_states"), 47104);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage0_in_flight"), 2);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage0_activations"), 19328);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage0_total"), 68736);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage1_model_states"), 46080);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage1_in_flight"), 1);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage1_activations"), 14336);
    EXPECT_DOUBLE_EQ(get(r, "memory_by_stage", "stage1_total"), 62720);
    EXPECT_DOUBLE_EQ(get(r, "memory", "stage"), 0);
    EXPECT_DOUBLE_EQ(get(r, "memory", "model_states"), 47104);
    EXPECT_DOUBLE_EQ(get(r, "memory", "total"), 68736);
    EXPECT_EQ(r.to_json().at("memory").at("fits"), "yes");
    // GPipe: both stages hold all 4 micro-batches. Stage 0: 16 x (4 x 596 + 16) = 38400, total
    // 87808; stage 1: 16 x (4 x 880 + 16) = 56576, total 104960, the heaviest, over 100000.
    in.gpipe = true;
    const Report g = make_plan(in);
    EXPECT_DOUBLE_EQ(get(g, "memory_by_stage", "stage0_activations"), 38400);
    EXPECT_DOUBLE_EQ(get(g, "memory_by_stage", "stage0_total"), 87808);
    EXPECT_DOUBLE_EQ(get(g, "memory_by_stage", "stage1_activations"), 56576);
    EXPECT_DOUBLE_EQ(get(g, "memory_by_stage", "stage1_total"), 104960);
    EXPECT_DOUBLE_EQ(get(g, "memory", "stage"), 1);
    EXPECT_DOUBLE_EQ(get(g, "memory", "total"), 104960);
    EXPECT_EQ(g.to_json().at("memory").at("fits"), "no");
    // 1F1B on 3 stages: 4 layers split 2, 1, 1.
    //   stage 0: as above with 3 micro-batches in flight: 16 x (3 x 596 + 16) = 28864; total 78272
    //   stage 1: h.2 alone, 896 x 16 = 14336 bytes; 2 micro-batches of 272 + 2 x 16 = 304, + 16:
    //            16 x 624 = 9984; total 26624
    //   stage 2: h.3 + ln_f + head = 1984 elements, 31744 bytes; 1 micro-batch of
    //            272 + 2 x 16 + 288 = 592, + 16: 16 x 608 = 9728; total 43776
    in.gpipe = false;
    in.pipeline_stages = 3;
    const Report t = make_plan(in);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage0_layers"), 2);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage1_layers"), 1);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage2_layers"), 1);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage0_total"), 78272);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage1_model_states"), 14336);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage1_activations"), 9984);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage1_total"), 26624);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage2_model_states"), 31744);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage2_activations"), 9728);
    EXPECT_DOUBLE_EQ(get(t, "memory_by_stage", "stage2_total"), 43776);
    EXPECT_DOUBLE_EQ(get(t, "memory", "total"), 78272);
}

// A pipeline's traffic: four_layers (head [128, 8], tied) as 2 data-parallel ranks x 2 stages,
// M = 4 micro-batches of B 1, T 16, bf16 (e = 2); rings of n = 2 send (n-1)/n x e = 1 byte per
// element for each reduce-scatter or all-gather.
//   data-parallel, each stage over its own units: stage 0 2944 elements, stage 1 2880 (above)
//     ZeRO 1: RS + AG: 2 x 2944 = 5888 at stage 0, the busiest (the whole model's 4800: 9600)
//     ZeRO 2: RS on each of the 4 micro-batches + AG: 5 x 2944 = 14720
//     Muon at ZeRO 1: + its FP32 block all-gather, 1/2 x 4 x 2 x 896 = 3584: 9472
//   point to point: B T C e = 16 x 8 x 2 = 256 per micro-batch, one way on 2 stages: 4 x 256 =
//     1024; on 3 stages a middle stage sends both ways: 2048
//   the tied head's gradient sum: 128 x 8 x 2 = 2048 at ZeRO 0-1, a rank's half at ZeRO 2: 1024
TEST(PlanComm, PipelineStagesSyncTheirOwnUnitsAndSendTheStream) {
    PlanInputs in;
    in.model = four_layers();
    in.model->head_matrix = {128, 8};
    in.tokens = 1e6;
    in.batch = 1;
    in.seq_len = 16;
    in.ranks = 2;
    in.pipeline_stages = 2;
    in.micro_batches = 4;
    in.zero_stage = 1;
    Report r = make_plan(in);
    EXPECT_DOUBLE_EQ(get(r, "comm", "stage"), 0);
    EXPECT_DOUBLE_EQ(get(r, "comm", "bytes_per_rank_per_step"), 5888);
    EXPECT_DOUBLE_EQ(get(r, "comm", "zero2"), 14720);
    EXPECT_DOUBLE_EQ(get(r, "pipeline", "p2p_bytes_per_micro_batch"), 256);
    EXPECT_DOUBLE_EQ(get(r, "pipeline", "p2p_bytes_per_step"), 1024);
    EXPECT_DOUBLE_EQ(get(r, "pipeline", "tied_head_sum_bytes"), 2048);
    in.zero_stage = 2;
    EXPECT_DOUBLE_EQ(get(make_plan(in), "comm", "bytes_per_rank_per_step"), 14720);
    EXPECT_DOUBLE_EQ(get(make_plan(in), "pipeline", "tied_head_sum_bytes"), 1024);
    in.zero_stage = 1;
    in.muon = true;
    EXPECT_DOUBLE_EQ(get(make_plan(in), "comm", "bytes_per_rank_per_step"), 9472);
    in.muon = false;
    in.pipeline_stages = 3;
    EXPECT_DOUBLE_EQ(get(make_plan(in), "pipeline", "p2p_bytes_per_step"), 2048);
    in.model->tied_head = false;
    EXPECT_FALSE(make_plan(in).to_json().at("pipeline").contains("tied_head_sum_bytes"));
    // Without a pipeline the same ranks sync the whole model: 2 x 4800.
    in.pipeline_stages = 1;
    in.micro_batches = 0;
    r = make_plan(in);
    EXPECT_DOUBLE_EQ(get(r, "comm", "bytes_per_rank_per_step"), 9600);
    EXPECT_FALSE(r.to_json().at("comm").contains("stage"));
}

TEST(PlanComm, RingBytesPerStage) {
    LayoutShape l;
    l.units = {4000, 1000, 1000, 1000, 1000, 8};  // four blocks and ln_f
    l.total = 7008;
    const double part = 3.0 / 4 * 2;
    EXPECT_DOUBLE_EQ(comm_bytes_per_step(l, 0, 4, 2, 3).total(), 2 * part * 7008);
    EXPECT_DOUBLE_EQ(comm_bytes_per_step(l, 1, 4, 2, 3).total(), 2 * part * 7008);
    EXPECT_DOUBLE_EQ(comm_bytes_per_step(l, 2, 4, 2, 3).total(), 4 * part * 7008);
    // stage 3: RS 3 x psi; AG psi + 2 x units 3..5 + 3 x units 1..3
    EXPECT_DOUBLE_EQ(comm_bytes_per_step(l, 3, 4, 2, 3).all_gather, part * (7008 + 2 * 2008 + 3 * 3000));
    EXPECT_DOUBLE_EQ(comm_bytes_per_step(l, 3, 1, 2, 3).total(), 0);
}

TEST(PlanComm, CountAloneGathersEveryParameterInForwardAndBackward) {
    // Without units nothing stays in a gather slot: the paper's 3 psi per micro-step at stage 3.
    const double part = 7.0 / 8 * 2;
    const CommBytes c = comm_bytes_per_step(layout_from_count(1e9), 3, 8, 2, 3);
    EXPECT_DOUBLE_EQ(c.reduce_scatter, 3 * part * 1e9);
    EXPECT_DOUBLE_EQ(c.all_gather, 6 * part * 1e9);
    PlanInputs in;
    in.params = 1e9;
    in.device = *find_device("h100");
    in.devices = 8;
    in.zero_stage = 3;
    const Report r = make_plan(in);
    EXPECT_DOUBLE_EQ(get(r, "comm", "zero0"), 2 * part * 1e9);
    EXPECT_DOUBLE_EQ(get(r, "comm", "zero3"), 3 * part * 1e9);
}

TEST(PlanMemory, BytesPerParamFollowTheDtypeAndMasterWeights) {
    struct Want {
        int e;
        bool master;
        double stage[4];  // on 8 ranks
    };
    const Want wants[] = {{2, true, {16, 4 + 12.0 / 8, 2 + 14.0 / 8, 16.0 / 8}},
                          {4, true, {16, 8 + 8.0 / 8, 4 + 12.0 / 8, 16.0 / 8}},  // fp32 keeps no master copy
                          {2, false, {12, 4 + 8.0 / 8, 2 + 10.0 / 8, 12.0 / 8}}};
    for (const Want& w : wants) {
        for (int st = 0; st <= 3; st++) {
            PlanInputs in;
            in.params = 1e9;
            in.ranks = 8;
            in.dtype_bytes = w.e;
            in.master_weights = w.master;
            in.zero_stage = st;
            const Report r = make_plan(in);
            for (int k = 0; k <= 3; k++)
                EXPECT_DOUBLE_EQ(get(r, "memory", "zero" + std::to_string(k) + "_bytes_per_param"), w.stage[k])
                    << "e " << w.e << " master " << w.master << " stage " << k;
            EXPECT_DOUBLE_EQ(get(r, "memory", "model_states") / 1e9, w.stage[st]) << "e " << w.e << " master " << w.master;
        }
    }
}

TEST(PlanMemory, MuonNewtonSchulzBufferPerRank) {
    // One GPT-2 block at C = 8, laid out as c_attn [24, 8], c_proj [8, 8], c_fc [32, 8],
    // c_proj [8, 32] (biases and norms between them left out): 320 elements, 3 x 128 after padding.
    MuonUnit u{1, 1000, 1384, {{1000, 192, 24, 8}, {1192, 64, 8, 8}, {1256, 256, 32, 8}, {1512, 256, 8, 32}}};
    const size_t fc = 2 * 8 * 8 + 8 * 32, attn = 2 * 8 * 8 + 8 * 24;
    EXPECT_EQ(muon_ns_floats(u, u.begin, u.end), fc);
    EXPECT_EQ(muon_ns_floats({u}, 0, 3, 0), fc);  // stage 0: every rank orthogonalises the whole unit
    EXPECT_EQ(muon_ns_floats({u}, 1, 1, 0), fc);
    // ZeRO 1 at 3 ranks: slices [1000, 1128), [1128, 1256), [1256, 1384)
    EXPECT_EQ(muon_ns_floats({u}, 1, 3, 0), attn);  // c_attn only
    EXPECT_EQ(muon_ns_floats({u}, 1, 3, 1), attn);  // c_attn's tail and c_proj
    EXPECT_EQ(muon_ns_floats({u}, 1, 3, 2), fc);
    EXPECT_EQ(muon_ns_floats(MuonUnit{}, 0, 0), 0u);
}

}  // namespace
}  // namespace sixnd::plan
