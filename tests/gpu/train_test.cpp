// Training on the GPU: 20 BF16 steps track the CPU's BF16 run, and two GPU runs (deterministic
// kernels) give the same bits. Skips, with the reason, where no device answers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "data/shard.h"
#include "model/cuda/cuda_ops.h"
#include "model/init.h"
#include "tests/util/test_util.h"
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

}  // namespace

// BF16 roundings differ between the backends (cuBLASLt vs oneDNN blocking, flash tiling), so
// the runs drift apart slowly; 20 steps stay within 2% of each other's loss.
TEST(GpuTraining, TracksTheCpuAndRepeatsBitForBit) {
    std::string why;
    if (!cuda_device_available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    std::string dir = test::make_temp_dir("sixnd_gpu_train_");
    // head size 64, so the flash kernel (not the naive fallback) runs on the GPU
    GPTConfig c = preset_config("tiny", 211, 64);
    c.n_head = 2;
    c.n_embd = 128;
    auto tok = test::random_ints(20000, 1, 0, c.vocab_size);
    write_shard(dir + "/train.bin", std::vector<uint32_t>(tok.begin(), tok.end()));
    std::vector<float> p = gpt2_init(ParamLayout(c), c, 3);
    TrainResult cpu = train(options(dir, dir + "/train.bin", "cpu"), c, p);
    TrainResult gpu = train(options(dir, dir + "/train.bin", "cuda"), c, p);
    TrainOptions again = options(dir, dir + "/train.bin", "cuda");
    again.out_dir += "_again";
    TrainResult gpu2 = train(again, c, p);
    ASSERT_EQ(gpu.losses.size(), 20u);
    for (size_t i = 0; i < gpu.losses.size(); i++)
        EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 2e-2 * cpu.losses[i]) << "step " << i + 1;
    EXPECT_LT(gpu.losses.back(), gpu.losses.front());
    EXPECT_EQ(gpu.losses, gpu2.losses);
    std::filesystem::remove_all(dir);
}
