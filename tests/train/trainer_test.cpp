// The training loop on the CPU: overfitting, determinism, bit-exact resume, the NaN guard,
// the master-weights ablation, model-state bytes, and corrupt checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>

#include "core/error.h"
#include "core/hex.h"
#include "core/read_file.h"
#include "data/shard.h"
#include "model/backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "tests/util/log_events.h"
#include "tests/util/test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "train/optimizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "train/trainer.h"

using namespace sixnd;
namespace fs = std::filesystem;

namespace {

GPTConfig tiny() { return preset_config("tiny"); }

std::string make_data(const std::string& dir, size_t ntok, uint64_t seed, int vocab) {
    auto v = test::random_ints(ntok, seed, 0, vocab);
    std::vector<uint32_t> u(v.begin(), v.end());
    std::string path = dir + "/train_000.bin";
    write_shard(path, u);
    return path;
}

TrainOptions base_options(const std::string& dir, const std::string& data) {
    TrainOptions o;
    o.device = "cpu";
    o.dtype = DType::f32;
    o.train_data = data;
    o.batch = 2;
    o.seq_len = 16;
    o.steps = 6;
    o.schedule.kind = ScheduleKind::cosine;
    o.schedule.lr = 3e-3f;
    o.schedule.warmup = 2;
    o.optimizer.weight_decay = 0.1f;
    o.grad_clip = 1.0f;
    o.out_dir = dir + "/run";
    o.keep_last = 0;
    o.progress = false;
    o.peak_tflops = 1;  // skip the matmul measurement in tests
    return o;
}

std::vector<float> init_params(const GPTConfig& c) { return gpt2_init(ParamLayout(c), c, 9); }

std::vector<char> file_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

TEST(Trainer, OverfitsOneBatch) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    // Exactly one batch of data: every step sees the same 2 x 16 tokens.
    std::string data = make_data(t.dir, 2 * 16 + 1, 1, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 120;
    o.schedule.kind = ScheduleKind::constant;
    o.schedule.lr = 1e-2f;
    o.schedule.warmup = 0;
    o.optimizer.weight_decay = 0;
    TrainResult r = train(o, c, init_params(c));
    EXPECT_GT(r.losses.front(), 4.0f);
    EXPECT_LT(r.last_loss, 0.05f) << "first loss " << r.losses.front();
}

TEST(Trainer, SameSeedSameLosses) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 4000, 2, c.vocab_size);
    for (DType dt : {DType::f32, DType::bf16}) {
        TrainOptions o = base_options(t.dir, data);
        o.dtype = dt;
        o.out_dir = t.dir + "/run1_" + dtype_name(dt);
        TrainResult a = train(o, c, init_params(c));
        o.out_dir = t.dir + "/run2_" + dtype_name(dt);
        TrainResult b = train(o, c, init_params(c));
        EXPECT_EQ(a.losses, b.losses) << dtype_name(dt);
    }
}

// Train 2N steps straight, or N, stop, resume, N more: the losses and parameters are the same
// bits, with shuffling, gradient accumulation and a schedule that crosses the stop.
TEST(Trainer, ResumeIsBitExact) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 3000, 3, c.vocab_size);
    for (DType dt : {DType::f32, DType::bf16}) {
        TrainOptions o = base_options(t.dir, data);
        o.dtype = dt;
        o.steps = 8;
        o.total_batch_tokens = 2 * 2 * 16;
        o.out_dir = t.dir + "/straight_" + dtype_name(dt);
        TrainResult straight = train(o, c, init_params(c));

        o.out_dir = t.dir + "/split_" + dtype_name(dt);
        o.checkpoint_every = 4;
        o.steps = 8;
        TrainOptions first = o;
        first.stop_at = 4;
        TrainResult a = train(first, c, init_params(c));
        o.resume = "latest";
        TrainResult b = train(o, c, init_params(c));
        std::vector<float> joined = a.losses;
        joined.insert(joined.end(), b.losses.begin(), b.losses.end());
        EXPECT_EQ(joined, straight.losses) << dtype_name(dt);
        EXPECT_EQ(file_bytes(straight.last_checkpoint + "/params.bin"), file_bytes(b.last_checkpoint + "/params.bin"));
    }
}

// Plants a NaN in the first gradient on the steps `when` accepts (CPU: gradients are host memory).
static std::function<void(int, void*, size_t)> nan_gradient_on(DType dt, std::function<bool(int)> when) {
    return [dt, when](int step, void* grads, size_t) {
        if (!when(step)) return;
        if (dt == DType::f32) static_cast<float*>(grads)[0] = std::nanf("");
        else static_cast<uint16_t*>(grads)[0] = 0x7fc0;
    };
}

// One non-finite gradient in a healthy run: the step is skipped and the parameters and every
// byte of the optimizer state (master weights, both moments) are exactly those of the step before.
TEST(Trainer, NonFiniteGradientLeavesStateBitwiseUnchanged) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 4000, 4, c.vocab_size);
    for (DType dt : {DType::f32, DType::bf16}) {
        TrainOptions o = base_options(t.dir, data);
        o.dtype = dt;
        o.steps = 6;
        o.checkpoint_every = 1;
        o.out_dir = t.dir + "/run_" + dtype_name(dt);
        o.test_gradient_hook = nan_gradient_on(dt, [](int step) { return step == 4; });
        TrainResult r = train(o, c, init_params(c));
        EXPECT_EQ(r.losses.size(), 5u) << "one step skipped";
        const std::string root = o.out_dir + "/checkpoints/";
        for (const char* f : {"params.bin", "optim-rank0.bin"}) {
            EXPECT_EQ(file_bytes(root + "step-00000003/" + f), file_bytes(root + "step-00000004/" + f)) << f << " " << dtype_name(dt);
            EXPECT_NE(file_bytes(root + "step-00000004/" + f), file_bytes(root + "step-00000005/" + f)) << f << " " << dtype_name(dt);
        }
        EXPECT_EQ(CheckpointReader(root + "step-00000004").meta().applied_steps, 3);
    }
}

TEST(Trainer, NonFiniteStepsInARowStopAtTheLastGoodCheckpoint) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 4000, 4, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 20;
    o.checkpoint_every = 1;
    o.max_bad_steps = 3;
    o.log = t.dir + "/log.jsonl";
    o.test_gradient_hook = nan_gradient_on(o.dtype, [](int step) { return step >= 2; });
    try {
        train(o, c, init_params(c));
        FAIL() << "training did not stop";
    } catch (const Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("3 consecutive steps"), std::string::npos) << msg;
        EXPECT_NE(msg.find("step-00000003"), std::string::npos) << msg;
    }
    std::string last = latest_checkpoint(o.out_dir + "/checkpoints");
    ASSERT_FALSE(last.empty());
    CheckpointReader ck(last);
    EXPECT_NO_THROW(restore_params(ck, ParamLayout(c)));
    EXPECT_EQ(test::log_events(o.log, "skip").size(), 3u);
    EXPECT_EQ(test::log_events(o.log, "bill").size(), 1u) << "a run that stops early still has its bill";
}

// An update that overflows (learning rate x weight decay beyond float range: finite flags, an
// infinite product) is caught after the update, before any checkpoint: the run stops naming the
// last checkpoint, and every checkpoint left is finite.
TEST(Trainer, OverflowingUpdateStopsWithoutSavingIt) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 4000, 4, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 2;
    o.checkpoint_every = 1;
    train(o, c, init_params(c));
    o.steps = 6;
    o.resume = "latest";
    o.schedule.kind = ScheduleKind::constant;
    o.schedule.warmup = 0;
    o.schedule.lr = 1e38f;
    o.optimizer.weight_decay = 1e9f;
    o.grad_clip = 0;
    o.log = t.dir + "/overflow.jsonl";
    try {
        train(o, c, init_params(c));
        FAIL() << "training did not stop";
    } catch (const Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("step 3: the update made parameters non-finite"), std::string::npos) << msg;
        EXPECT_NE(msg.find("step-00000002"), std::string::npos) << msg;
    }
    // The step it stopped in was computed: the bill counts it.
    const auto bills = test::log_events(o.log, "bill");
    ASSERT_EQ(bills.size(), 1u);
    EXPECT_GT(bills[0].at("model_flops").get<double>(), 0) << "the bill of a run stopped by its first step's update";
    const std::string root = o.out_dir + "/checkpoints";
    EXPECT_EQ(latest_checkpoint(root), root + "/step-00000002");
    for (const CheckpointEntry& e : list_checkpoints(root)) EXPECT_NO_THROW(restore_params(CheckpointReader(e.dir), ParamLayout(c)));
}

// A learning rate that makes the weights huge but finite: the steps after it are skipped as
// non-finite, and the result says so (the summary's loss was the last finite step's, as if the
// run had ended well).
TEST(Trainer, ARunEndingOnSkippedStepsSaysSo) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 4000, 4, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 3;
    o.schedule.kind = ScheduleKind::constant;
    o.schedule.warmup = 0;
    o.schedule.lr = 1e30f;
    o.grad_clip = 0;
    const TrainResult r = train(o, c, init_params(c));
    EXPECT_EQ(r.steps_done, 3);
    EXPECT_EQ(r.skipped_at_end, 2);
    EXPECT_TRUE(std::isnan(r.last_loss) || std::isinf(r.last_loss)) << r.last_loss;
}

// Evaluated at step 2 (finite), then an LR of 1e30 from step 3 on: the evaluation at the end is
// not finite, and the result's validation numbers are that evaluation's (NaN), not step 2's.
TEST(Trainer, ANonFiniteLastEvaluationLeavesNoEarlierNumbers) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = preset_config("tiny", 256);
    std::string data = make_data(t.dir, 4000, 4, c.vocab_size);
    TokenizerSpec spec;
    spec.pattern = resolve_pattern("gpt2");
    for (int b = 0; b < 256; b++) spec.tokens.push_back(std::string(1, static_cast<char>(b)));
    Tokenizer::from_spec(spec, "test").save(t.dir + "/tok.bin");
    TrainOptions o = base_options(t.dir, data);
    o.steps = 4;
    o.val_data = data;
    o.eval_every = 2;
    o.tokenizer = t.dir + "/tok.bin";
    o.grad_clip = 0;
    o.spike.inject_lr = {3, 1e30, 2};
    o.log = t.dir + "/log.jsonl";
    const TrainResult r = train(o, c, init_params(c));
    const auto evals = test::log_events(o.log, "eval");
    ASSERT_EQ(evals.size(), 2u);
    EXPECT_TRUE(evals[0].at("val_bpb").is_number()) << evals[0];
    EXPECT_TRUE(evals[1].at("val_bpb").is_null()) << evals[1];
    EXPECT_TRUE(std::isnan(r.last_val_loss)) << r.last_val_loss;
    EXPECT_TRUE(std::isnan(r.last_val_bpb)) << r.last_val_bpb;
}

// --sample-every: rank 0 draws a sample from <|endoftext|> every N steps and at the last, and
// logs it; the seed is the run's and the step's, so a run stopped and resumed draws the same
// samples as one that was not.
TEST(Trainer, SamplesEveryNStepsTheSameWhenResumed) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = preset_config("tiny", 257);
    std::string data = make_data(t.dir, 4000, 4, 256);
    TokenizerSpec spec;
    spec.pattern = resolve_pattern("gpt2");
    for (int b = 0; b < 256; b++) spec.tokens.push_back(std::string(1, static_cast<char>(b)));
    spec.tokens.push_back("<|endoftext|>");
    spec.specials = {{"<|endoftext|>", 256}};
    Tokenizer::from_spec(spec, "test").save(t.dir + "/tok.bin");
    TrainOptions o = base_options(t.dir, data);
    o.steps = 5;
    o.tokenizer = t.dir + "/tok.bin";
    o.sample_every = 2;
    o.sample_tokens = 6;
    o.log = t.dir + "/whole.jsonl";
    train(o, c, init_params(c));
    const auto whole = test::log_events(o.log, "sample");
    ASSERT_EQ(whole.size(), 3u);  // steps 2, 4 and the last, 5
    for (size_t i = 0; i < whole.size(); i++) {
        EXPECT_EQ(whole[i].at("step").get<int>(), i < 2 ? 2 * int(i + 1) : 5);
        const auto ids = whole[i].at("ids").get<std::vector<int>>();
        EXPECT_TRUE(!ids.empty() && ids.size() <= 6u) << whole[i];
        for (int id : ids) EXPECT_LE(id, 256) << whole[i];
        EXPECT_TRUE(whole[i].at("text").is_string());
    }
    TrainOptions first = o;
    first.out_dir = t.dir + "/split";
    first.stop_at = 3;
    first.log = t.dir + "/split.jsonl";
    train(first, c, init_params(c));
    TrainOptions rest = first;
    rest.stop_at = 0;
    rest.resume = "latest";
    train(rest, c, init_params(c));
    const auto split = test::log_events(first.log, "sample");
    ASSERT_EQ(split.size(), 4u);  // 2, the stop at 3, then 4 and 5 after the resume
    EXPECT_EQ(split[0].at("ids"), whole[0].at("ids"));
    EXPECT_EQ(split[2].at("ids"), whole[1].at("ids"));
    EXPECT_EQ(split[3].at("ids"), whole[2].at("ids"));

    TrainOptions bad = o;
    bad.tokenizer.clear();
    EXPECT_THROW(bad.validate(1), Error);
    bad = o;
    bad.zero_stage = 3;
    EXPECT_THROW(bad.validate(1), Error);
}

// params.bin with a NaN but consistent checksums (as a faulty writer would leave it): the one
// parameter loader refuses it, so `sixnd sample` does too.
TEST(Trainer, NonFiniteCheckpointIsRefusedByTheLoader) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 2000, 6, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 1;
    CheckpointReader good(train(o, c, init_params(c)).last_checkpoint);
    std::string params = good.read_file("params.bin");
    const float nan = std::nanf("");
    std::memcpy(&params[40], &nan, 4);
    std::string dir;
    {
        CheckpointWriter w(t.dir + "/nan", 1, true);
        w.add_file("params.bin", params.data(), params.size());
        const std::string optim = good.read_file("optim-rank0.bin");
        w.add_file("optim-rank0.bin", optim.data(), optim.size());
        dir = w.commit(good.meta());
    }
    try {
        restore_params(CheckpointReader(dir), ParamLayout(c));
        FAIL() << "a NaN parameter was loaded";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("params.bin: holds 1 non-finite"), std::string::npos) << e.what();
    }
    if (const char* bin = std::getenv("SIXND_BIN")) {
        const std::string cmd = std::string(bin) + " sample --device cpu --checkpoint " + dir + " --prompt-ids 1,2 2>/dev/null";
        EXPECT_NE(std::system(cmd.c_str()), 0) << "sixnd sample accepted NaN weights";
    }
}

// Updates below BF16 resolution vanish without the FP32 master copy: with weights of size ~1 and
// a learning rate of 1e-4 (Adam steps of ~1e-4, under half a BF16 ulp of 2^-8), the BF16
// parameters never move and the loss stalls, while the master copy accumulates the steps.
TEST(Trainer, MasterWeightsOffStalls) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 2 * 16 + 1, 5, c.vocab_size);
    std::vector<float> p = init_params(c);
    for (auto& x : p) x = x >= 0 ? 1.0f + std::fabs(x) : -1.0f - std::fabs(x);  // every weight in [1, 2): ulp 2^-7
    TrainOptions o = base_options(t.dir, data);
    o.dtype = DType::bf16;
    o.steps = 60;
    o.schedule.kind = ScheduleKind::constant;
    o.schedule.lr = 1e-3f;
    o.schedule.warmup = 0;
    o.optimizer.weight_decay = 0;
    o.grad_clip = 0;
    o.optimizer.master_weights = true;
    TrainResult on = train(o, c, p);
    o.optimizer.master_weights = false;
    o.out_dir = t.dir + "/off";
    TrainResult off = train(o, c, p);
    EXPECT_EQ(off.losses.front(), off.losses.back()) << "without master weights the BF16 parameters should not move";
    EXPECT_LT(on.losses.back(), on.losses.front() - 0.05f) << "with master weights the loss should improve";
}

TEST(Trainer, ModelStateBytesPerParameter) {
    GPTConfig c = tiny();
    struct Case {
        DType dt;
        bool master;
        size_t bytes;
    };
    for (Case k : {Case{DType::bf16, true, 16}, Case{DType::bf16, false, 12}, Case{DType::f32, true, 16}}) {
        Backend be = make_backend("cpu", k.dt);
        GPT m(c, *be.ops);
        OptimizerConfig oc;
        oc.master_weights = k.master;
        void* base = m.params();
        AdamW opt(*be.ops, m.layout(), whole_buffer(m.layout().total()), oc, [base](const ShardSpan&) { return base; });
        const MemoryLedger& l = be.memory->ledger();
        size_t state = l.current(MemCategory::params) + l.current(MemCategory::grads) + l.current(MemCategory::master) +
                       l.current(MemCategory::adam_m) + l.current(MemCategory::adam_v);
        EXPECT_EQ(state, k.bytes * m.layout().total()) << dtype_name(k.dt) << " master " << k.master;
    }
}

TEST(Trainer, CorruptCheckpointsAreRejectedByName) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 2000, 6, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 2;
    std::string ck = train(o, c, init_params(c)).last_checkpoint;
    auto error_of = [](const std::string& dir) -> std::string {
        try {
            CheckpointReader r(dir);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    EXPECT_EQ(error_of(ck), "");
    auto copy = [&](const std::string& name) {
        std::string d = t.dir + "/" + name;
        fs::copy(ck, d, fs::copy_options::recursive);
        return d;
    };
    std::string flipped = copy("flipped");
    {
        std::fstream f(flipped + "/params.bin", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(100);
        char ch = 0x55;
        f.write(&ch, 1);
    }
    EXPECT_NE(error_of(flipped).find("params.bin: checksum mismatch"), std::string::npos) << error_of(flipped);
    std::string truncated = copy("truncated");
    fs::resize_file(truncated + "/optim-rank0.bin", 100);
    EXPECT_NE(error_of(truncated).find("optim-rank0.bin: truncated"), std::string::npos) << error_of(truncated);
    // A device in a file's place is named, not read forever.
    std::string device = copy("device");
    fs::remove(device + "/optim-rank0.bin");
    fs::create_symlink("/dev/zero", device + "/optim-rank0.bin");
    EXPECT_NE(error_of(device).find("optim-rank0.bin: is a character device, not a regular file"), std::string::npos)
        << error_of(device);
    std::string undone = copy("undone");
    fs::remove(undone + "/DONE");
    EXPECT_NE(error_of(undone).find("DONE marker is missing"), std::string::npos);
    o.resume = undone;
    o.steps = 4;
    EXPECT_THROW(train(o, c, init_params(c)), Error);
}

// A checkpoint written before shards carried a content hash (its data hash was of the paths as
// spelled) still resumes on the same data however its path is spelled now, and names other data.
TEST(Trainer, CheckpointWithoutShardHashesResumesOnItsData) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 2000, 7, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 2;
    const std::string ck = train(o, c, init_params(c)).last_checkpoint;
    CheckpointMeta m = CheckpointMeta::parse(read_whole_file(ck + "/meta.json"), ck);
    const std::string ident = data + ":2000;";
    m.data = {{"pattern", data}, {"tokens", 2000}, {"shards", {{{"path", data}, {"tokens", 2000}}}},
              {"hash", hex64(xxh64_bytes(ident.data(), ident.size()))}};
    std::ofstream(ck + "/meta.json") << m.to_text();
    o.resume = ck;
    o.steps = 3;
    o.train_data = t.dir + "/./train_000.bin";
    EXPECT_EQ(train(o, c, init_params(c)).steps_done, 3);

    o.out_dir = t.dir + "/other";
    fs::create_directories(t.dir + "/elsewhere");
    o.train_data = make_data(t.dir + "/elsewhere", 1000, 8, c.vocab_size);
    try {
        train(o, c, init_params(c));
        FAIL() << "resumed on other data";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("1 shard (train_000.bin, 2000 tokens) -> 1 shard (train_000.bin, 1000 tokens)"),
                  std::string::npos)
            << e.what();
    }
}

// What a crash mid-save leaves — a half-written temporary directory — is ignored: `latest`
// is still the previous checkpoint and the run resumes from it.
TEST(Trainer, HalfWrittenCheckpointIsIgnored) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 2000, 7, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    o.steps = 2;
    std::string ck = train(o, c, init_params(c)).last_checkpoint;
    const std::string root = o.out_dir + "/checkpoints";
    fs::create_directory(root + "/.step-00000003.tmp");
    std::ofstream(root + "/.step-00000003.tmp/params.bin") << "partial";
    EXPECT_EQ(latest_checkpoint(root), ck);
    o.steps = 3;
    o.resume = "latest";
    TrainResult r = train(o, c, init_params(c));
    EXPECT_EQ(r.steps_done, 3);
    EXPECT_FALSE(fs::exists(root + "/.step-00000003.tmp"));
}

TEST(Trainer, DataSmallerThanOneBatchIsAnError) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = tiny();
    std::string data = make_data(t.dir, 20, 8, c.vocab_size);
    TrainOptions o = base_options(t.dir, data);
    try {
        train(o, c, init_params(c));
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(data + ": holds 20 tokens"), std::string::npos) << e.what();
    }
}

// Shards made with one tokenizer and a run that names another: refused before any step.
TEST(Trainer, VocabularyMismatchWithTheDataManifest) {
    test::TempDir t("sixnd_train_");
    GPTConfig c = preset_config("tiny", 256);
    auto v = test::random_ints(2000, 9, 0, 256);
    write_shard(t.dir + "/train_000000.bin", std::vector<uint32_t>(v.begin(), v.end()));
    TokenizerSpec spec;
    spec.pattern = resolve_pattern("gpt2");
    for (int b = 0; b < 256; b++) spec.tokens.push_back(std::string(1, static_cast<char>(b)));
    Tokenizer tok = Tokenizer::from_spec(spec, "test");
    tok.save(t.dir + "/tok.bin");
    auto manifest = [&](const std::string& hash) {
        std::ofstream(t.dir + "/manifest.json") << R"({"format": "sixnd data manifest", "tokenizer": {"hash": ")" << hash
                                                << R"("}, "output": {"train": {"shards": [{"file": "train_000000.bin", "tokens": 2000, "tokens_xxh3_64": ")"
                                                << hex64(Shard(t.dir + "/train_000000.bin").tokens_hash()) << R"("}]}}})";
    };
    TrainOptions o = base_options(t.dir, t.dir + "/manifest.json");
    o.steps = 1;
    o.tokenizer = t.dir + "/tok.bin";
    manifest("0123456789abcdef");
    try {
        train(o, c, init_params(c));
        FAIL() << "a vocabulary mismatch was not caught";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("vocabulary mismatch"), std::string::npos) << e.what();
    }
    manifest(tok.hash());
    EXPECT_EQ(train(o, c, init_params(c)).steps_done, 1);
    // A resume without --tokenizer carries the checkpoint's tokenizer on (and still checks it
    // against the data), so that later checkpoints can be sampled as text too.
    o.tokenizer.clear();
    o.resume = "latest";
    o.steps = 2;
    o.keep_last = 1;
    const std::string second = train(o, c, init_params(c)).last_checkpoint;
    EXPECT_EQ(file_bytes(second + "/tokenizer.bin"), file_bytes(t.dir + "/tok.bin"));
    EXPECT_FALSE(fs::exists(o.out_dir + "/checkpoints/step-00000001")) << "pruned by --keep-last 1";
}
