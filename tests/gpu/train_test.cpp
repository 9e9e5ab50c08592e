// Training on the GPU: 20 BF16 steps on learnable data (a short random sequence repeated) track
// the CPU's BF16 run — losses and final parameters — the loss falls well below its start, and
// two GPU runs (deterministic kernels) give the same bits. Skips, with the reason, where no
// device answers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/bf16.h"
#include "data/shard.h"
#include "model/cuda/cuda_ops.h"
#include "model/init.h"
#include "tests/util/test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "train/trainer.h"

using namespace sixnd;

namespace {

TrainOptions options(const std::string& dir, const std::string& data, const std::string& device) {
    TrainOptions o;
    o.device = device;
    o.dtype = DType::bf16;
    o.attention = AttentionKind::flash;
    o.train_data = data;
    o.batch = 4;
    o.seq_len = 64;
    o.steps = 20;
    o.schedule.lr = 1e-3f;
    o.schedule.warmup = 2;
    o.out_dir = dir + "/" + device;
    o.progress = false;
    o.peak_tflops = 1;
    return o;
}

// The relative Frobenius distance between two checkpoints' parameters.
double params_rel(const std::string& a, const std::string& b, const GPTConfig& c) {
    const ParamLayout layout(c);
    std::vector<char> pa = restore_params(CheckpointReader(a), layout), pb = restore_params(CheckpointReader(b), layout);
    const uint16_t* x = reinterpret_cast<const uint16_t*>(pa.data());
    const uint16_t* y = reinterpret_cast<const uint16_t*>(pb.data());
    double num = 0, den = 0;
    for (size_t i = 0; i < layout.total(); i++) {
        const double u = bf16::to_float(x[i]), v = bf16::to_float(y[i]);
        num += (u - v) * (u - v);
        den += v * v;
    }
    return std::sqrt(num / den);
}

}  // namespace

// BF16 roundings differ between the backends (cuBLASLt vs oneDNN blocking, flash tiling), so
// the runs drift apart slowly; 20 steps stay within 2% of each other's loss.
TEST(GpuTraining, TracksTheCpuAndRepeatsBitForBit) {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    const test::TempDir tmp("sixnd_gpu_train_");
    const std::string& dir = tmp.dir;
    // head size 64, so the flash kernel (not the naive fallback) runs on the GPU
    GPTConfig c = preset_config("tiny", 211, 64);
    c.n_head = 2;
    c.n_embd = 128;
    auto motif = test::random_ints(29, 1, 0, c.vocab_size);
    std::vector<uint32_t> tok;
    while (tok.size() < 20000) tok.insert(tok.end(), motif.begin(), motif.end());
    write_shard(dir + "/train.bin", tok);
    std::vector<float> p = gpt2_init(ParamLayout(c), c, 3);
    TrainResult cpu = train(options(dir, dir + "/train.bin", "cpu"), c, p);
    TrainResult gpu = train(options(dir, dir + "/train.bin", "cuda"), c, p);
    TrainOptions again = options(dir, dir + "/train.bin", "cuda");
    again.out_dir += "_again";
    TrainResult gpu2 = train(again, c, p);
    ASSERT_EQ(gpu.losses.size(), 20u);
    for (size_t i = 0; i < gpu.losses.size(); i++)
        EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 2e-2 * cpu.losses[i]) << "step " << i + 1;
    EXPECT_LT(cpu.losses.back(), 0.7f * cpu.losses.front()) << "the CPU run did not learn the repeated sequence";
    EXPECT_LT(gpu.losses.back(), 0.7f * gpu.losses.front()) << "the GPU run did not learn the repeated sequence";
    EXPECT_LT(params_rel(gpu.last_checkpoint, cpu.last_checkpoint, c), 2e-2);
    EXPECT_EQ(gpu.losses, gpu2.losses);
}
