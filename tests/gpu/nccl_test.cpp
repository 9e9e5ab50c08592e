// NcclComm on one GPU, a world of one rank (NCCL refuses two ranks on one GPU, and the device
// machine has no MPI: make_nccl_comm makes such a communicator without it).
// 1. Each collective through NCCL gives back its input (a sum over one rank), in FP32 and BF16,
//    on sizes that are no multiple of anything, and is ordered with the compute stream both ways:
//    a gather reads what a kernel queued just before it wrote, and does not overwrite a buffer
//    before a kernel queued earlier has read it (the host never waits for the compute, so only
//    stream order keeps these right).
// 2. Training the tiny model (BF16, flash attention, two micro-steps per step) through NCCL at
//    ZeRO stages 0-3 tracks the one-process GPU run, which tracks the CPU run. Each stage prints
//    one "nccl zero N: ... PASS|FAIL" line, which gpu_check.sh's summary repeats.
// Skips, with the reason, without a device or without NCCL in the build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/bf16.h"
#include "data/shard.h"
#include "dist/comm.h"
#include "model/cuda/cuda_ops.h"
#include "model/init.h"
#include "tests/util/test_util.h"
#include "train/trainer.h"

using namespace sixnd;

namespace {

#define SIXND_SKIP_WITHOUT_NCCL()                                                         \
    do {                                                                                  \
        std::string why_;                                                                 \
        if (!cuda_device_available(&why_)) GTEST_SKIP() << "no CUDA device: " << why_;    \
        if (!nccl_built()) GTEST_SKIP() << "this build has no NCCL (SIXND_NCCL=OFF or not found)"; \
    } while (0)

constexpr bool nccl_built() {
#ifdef SIXND_HAVE_NCCL_COMM
    return true;
#else
    return false;
#endif
}

// One communicator for the whole binary (NCCL's start-up is the slow part), destroyed when the
// tests end, not among the statics at exit, when the CUDA runtime may be gone before it.
std::unique_ptr<Comm> the_comm;
Comm& nccl() {
    if (!the_comm) the_comm = make_nccl_comm();
    return *the_comm;
}
struct NcclEnvironment : testing::Environment {
    void TearDown() override { the_comm.reset(); }
};
[[maybe_unused]] const testing::Environment* const kNcclEnvironment = testing::AddGlobalTestEnvironment(new NcclEnvironment);

std::vector<uint16_t> bf16_bits(const std::vector<float>& v) {
    std::vector<uint16_t> b(v.size());
    for (size_t i = 0; i < v.size(); i++) b[i] = bf16::from_float(v[i]);
    return b;
}

}  // namespace

TEST(NcclComm, EachCollectiveAtWorldSizeOne) {
    SIXND_SKIP_WITHOUT_NCCL();
    Comm& comm = nccl();
    ASSERT_STREQ(comm.name(), "nccl");
    ASSERT_EQ(comm.size(), 1);
    ASSERT_EQ(comm.rank(), 0);
    auto mem = make_cuda_memory(0);
    for (DType t : {DType::f32, DType::bf16}) {
        SCOPED_TRACE(dtype_name(t));
        const size_t n = 1237, es = dtype_size(t);
        const std::vector<float> f = test::random_floats(n, 11);
        const std::vector<uint16_t> h = bf16_bits(f);
        const void* host = t == DType::f32 ? static_cast<const void*>(f.data()) : static_cast<const void*>(h.data());
        DeviceBuffer a(mem.get(), n * es, MemCategory::workspace), b(mem.get(), n * es, MemCategory::workspace);
        std::vector<char> back(n * es);
        auto same = [&](const DeviceBuffer& d, const char* what) {
            mem->copy_to_host(back.data(), d.get(), n * es);
            EXPECT_EQ(std::memcmp(back.data(), host, n * es), 0) << what << " changed the values";
        };
        mem->copy_to_device(a.get(), host, n * es);
        comm.all_reduce_sum(a.get(), n, t);
        same(a, "all_reduce_sum");
        mem->memset(b.get(), 0, n * es);
        comm.reduce_scatter_sum(b.get(), a.get(), n, t);
        same(b, "reduce_scatter_sum");
        mem->memset(b.get(), 0, n * es);
        comm.all_gather_async(b.get(), a.get(), n, t)->wait();
        same(b, "all_gather_async");
        comm.all_gather(a.get(), a.get(), n, t);  // in place: in == out + rank * n
        same(a, "all_gather in place");
        comm.broadcast(a.get(), n * es, 0);
        same(a, "broadcast");
        comm.barrier();
    }
    for (int c = 0; c < static_cast<int>(Collective::count); c++)
        EXPECT_EQ(comm.bytes_sent(static_cast<Collective>(c)), 0u) << "one rank sends nothing";
}

// Big enough that a kernel runs for a while: a collective that did not wait for it would read
// (or overwrite) its buffer mid-way.
TEST(NcclComm, OrderedWithTheComputeStream) {
    SIXND_SKIP_WITHOUT_NCCL();
    Comm& comm = nccl();
    auto mem = make_cuda_memory(0);
    auto ops = make_cuda_ops(DType::bf16, *mem);
    const size_t n = size_t(64) << 20;  // 64 Mi values: 256 MiB of FP32 read, 128 MiB of BF16 written
    DeviceBuffer src(mem.get(), n * 4, MemCategory::workspace), x(mem.get(), n * 2, MemCategory::workspace),
        y(mem.get(), n * 2, MemCategory::workspace), z(mem.get(), n * 2, MemCategory::workspace),
        w(mem.get(), n * 2, MemCategory::workspace);
    std::vector<float> ones(n, 1.0f);
    mem->copy_to_device(src.get(), ones.data(), n * 4);
    std::vector<uint16_t> back(n);
    auto count_of = [&](const DeviceBuffer& d, float v) {
        mem->copy_to_host(back.data(), d.get(), n * 2);
        const uint16_t want = bf16::from_float(v);
        size_t k = 0;
        for (uint16_t e : back) k += e == want;
        return k;
    };
    for (int round = 0; round < 3; round++) {
        // Read after write: x = bf16(src) by a kernel, then gathered into y.
        mem->memset(x.get(), 0, n * 2);
        mem->memset(y.get(), 0, n * 2);
        ops->cast(x.get(), DType::bf16, src.get(), DType::f32, n);
        comm.all_gather_async(y.get(), x.get(), n, DType::bf16)->wait();
        EXPECT_EQ(count_of(y, 1.0f), n) << "round " << round << ": the gather read x before the cast had written it";
        // Write after read: a kernel reads y (into z), then a gather overwrites y with zeros; z
        // must hold what y held before. (The gather's request is waited only after the next
        // kernel, which touches neither of its buffers, is queued, as ZeRO-3 prefetches.)
        mem->memset(x.get(), 0, n * 2);
        ops->cast(z.get(), DType::bf16, y.get(), DType::bf16, n);  // same type: a device copy on the stream
        ops->cast(src.get(), DType::f32, y.get(), DType::bf16, n);
        auto req = comm.all_gather_async(y.get(), x.get(), n, DType::bf16);
        ops->cast(w.get(), DType::bf16, src.get(), DType::f32, n);  // overlaps the gather
        req->wait();
        EXPECT_EQ(count_of(z, 1.0f), n) << "round " << round << ": the gather overwrote y before the copy had read it";
        EXPECT_EQ(count_of(y, 0.0f), n) << "round " << round << ": the gather's result";
    }
}

// BF16 roundings differ from the CPU's (cuBLASLt vs oneDNN blocking, flash tiling), so runs
// drift apart slowly (tests/gpu/train_test.cpp: 2% over 20 steps); through NCCL with one rank
// the collectives are copies, so every stage should stay much closer to the one-process GPU run.
TEST(NcclComm, ZeroStagesTrainLikeOneProcess) {
    SIXND_SKIP_WITHOUT_NCCL();
    const test::TempDir tmp("sixnd_gpu_nccl_");
    const std::string& dir = tmp.dir;
    GPTConfig c = preset_config("tiny", 211, 64);
    c.n_head = 2;  // head size 64: the flash kernels, not the naive fallback
    c.n_embd = 128;
    const auto motif = test::random_ints(29, 1, 0, c.vocab_size);
    std::vector<uint32_t> tok;
    while (tok.size() < 20000) tok.insert(tok.end(), motif.begin(), motif.end());
    write_shard(dir + "/train.bin", tok);
    const std::vector<float> p = gpt2_init(ParamLayout(c), c, 3);
    auto options = [&](const std::string& device, int zero, const std::string& name) {
        TrainOptions o;
        o.device = device;
        o.dtype = DType::bf16;
        o.attention = AttentionKind::flash;
        o.train_data = dir + "/train.bin";
        o.batch = 4;
        o.seq_len = 64;
        o.total_batch_tokens = 2 * 4 * 64;  // two micro-steps: stage 2-3 shards accumulate
        o.steps = 8;
        o.schedule.lr = 1e-3f;
        o.schedule.warmup = 2;
        o.zero_stage = zero;
        o.out_dir = dir + "/" + name;
        o.progress = false;
        o.peak_tflops = 1;
        return o;
    };
    auto max_rel = [](const std::vector<float>& a, const std::vector<float>& ref) {
        double m = a.size() == ref.size() ? 0.0 : INFINITY;
        for (size_t i = 0; i < a.size() && i < ref.size(); i++)
            m = std::fmax(m, std::fabs(static_cast<double>(a[i]) - ref[i]) / std::fabs(ref[i]));
        return m;
    };
    const TrainResult cpu = train(options("cpu", 0, "cpu"), c, p);
    const TrainResult one = train(options("cuda", 0, "one_process"), c, p);
    ASSERT_EQ(one.losses.size(), 8u);
    const double cpu_rel = max_rel(one.losses, cpu.losses);
    std::printf("nccl reference: one-process GPU loss %.4f -> %.4f, max rel diff vs CPU %.2e (tolerance 2e-2): %s\n",
                one.losses.front(), one.losses.back(), cpu_rel, cpu_rel <= 2e-2 ? "PASS" : "FAIL");
    EXPECT_LE(cpu_rel, 2e-2) << "the one-process GPU run left the CPU run";
    EXPECT_LT(one.losses.back(), 0.8f * one.losses.front()) << "the GPU run did not learn the repeated sequence";
    for (int stage = 0; stage <= 3; stage++) {
        const TrainResult r = train(options("cuda", stage, "nccl_zero" + std::to_string(stage)), c, p, &nccl());
        const double rel = max_rel(r.losses, one.losses);
        std::printf("nccl zero %d: loss %.4f -> %.4f, max rel diff vs one process %.2e (tolerance 1e-2): %s\n", stage,
                    r.losses.empty() ? NAN : r.losses.front(), r.losses.empty() ? NAN : r.losses.back(), rel,
                    rel <= 1e-2 ? "PASS" : "FAIL");
        std::fflush(stdout);
        EXPECT_EQ(r.losses.size(), 8u) << "zero " << stage;
        EXPECT_LE(rel, 1e-2) << "zero " << stage << " through NCCL left the one-process run";
    }
}
