// Throughput of the CUDA flash attention (causal, bf16), forward and forward+backward, for head
// sizes 64 and 128 and T from 1k to 8k at a constant 16k tokens per batch and model width 2048,
// the shapes FlashAttention's own benchmarks use. FLOPs follow the same convention as
// bench/torch_attention.py: forward 4*B*NH*T^2*hs / 2 (causal), backward 2.5x forward.
// Each figure is the median of several timed repeats after a warm-up, on fresh random data.
// Prints a Markdown table, headed by the device and its dense bf16 peak (for MFU);
// --seq-lens 1024,4096 picks the T values (default 1k, 2k, 4k, 8k).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/error.h"
#include "core/split.h"
#include "model/cuda/cuda_ops.h"

using namespace sixnd;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F> double time_ms(MemoryBackend& mem, F&& f, int iters) {
    f();  // warm-up: kernel load, cuBLASLt plans, scratch growth
    mem.sync();
    std::vector<double> t;
    for (int r = 0; r < 5; r++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; i++) f();
        mem.sync();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / iters);
    }
    return median(t);
}

// "1024,4096" -> {1024, 4096}; each a multiple of 64 that divides the 16k tokens of a batch.
std::vector<int> parse_seq_lens(const std::string& s) {
    std::vector<int> out;
    for (const std::string& item : split_all(s, ',')) {
        char* end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < 64 || v > 16384 || 16384 % v != 0)
            throw Error("--seq-lens", "'" + item + "' is not a sequence length dividing 16384 (64 to 16384)");
        out.push_back(static_cast<int>(v));
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        // Flags first: a wrong one is said on any machine, not first met on the GPU's.
        std::vector<int> Ts = {1024, 2048, 4096, 8192};
        for (int i = 1; i < argc; i++) {
            if (std::strcmp(argv[i], "--seq-lens") != 0)
                throw Error(argv[i], "unknown argument (usage: attention_bench [--seq-lens 1024,2048,...])");
            // A last --seq-lens with no value had been called an unknown argument.
            if (i + 1 == argc) throw Error("--seq-lens", "needs a value (e.g. --seq-lens 1024,4096)");
            Ts = parse_seq_lens(argv[++i]);
        }
        std::string why;
        if (!cuda_device_available(&why)) {
            std::printf("attention_bench: skipped, no CUDA device (%s)\n", why.c_str());
            return 0;
        }
        CudaDeviceInfo info = cuda_device_info(0);
        std::printf("# sixnd flash attention, %s\n", info.name.c_str());
        if (info.peak_known) std::printf("# peak bf16 dense: %.1f TFLOP/s (table)\n", info.peak_bf16_tflops);
        std::printf("| impl | hs | T | B | NH | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s |\n");
        std::printf("|---|---|---|---|---|---|---|---|---|\n");
        auto mem = make_cuda_memory(0);
        CudaOpsOptions det, fast;
        fast.deterministic = false;
        auto ops_det = make_cuda_ops(DType::bf16, *mem, det);
        auto ops_fast = make_cuda_ops(DType::bf16, *mem, fast);
        for (int hs : {64, 128}) {
            for (int T : Ts) {
                const int B = 16384 / T, NH = 2048 / hs, C = NH * hs;
                const size_t nqkv = static_cast<size_t>(B) * T * 3 * C, nout = static_cast<size_t>(B) * T * C;
                const auto A = MemCategory::activations;
                DeviceBuffer qkv(mem.get(), nqkv * 2, A), out(mem.get(), nout * 2, A), dout(mem.get(), nout * 2, A),
                    dqkv(mem.get(), nqkv * 2, A), lse(mem.get(), sizeof(float) * B * NH * T, A);
                std::vector<bf16> h(nqkv);
                uint64_t x = 88172645463325252ull + T + hs;
                for (auto& e : h) {  // xorshift: fresh values in [-1, 1)
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    e = bf16(static_cast<float>(x >> 40) / static_cast<float>(1ull << 23) - 1.0f);
                }
                mem->copy_to_device(qkv.get(), h.data(), nqkv * 2);
                mem->copy_to_device(dout.get(), h.data(), nout * 2);
                const double fwd_flops = 4.0 * B * NH * static_cast<double>(T) * T * hs / 2.0;
                const int iters = T >= 4096 ? 5 : 10;
                for (int variant = 0; variant < 2; variant++) {
                    Ops& ops = variant == 0 ? *ops_det : *ops_fast;
                    auto fwd = [&] {
                        ops.attention_forward(AttentionKind::flash, out.get(), lse.as<float>(), nullptr, qkv.get(), B, T, C, NH, NH);
                    };
                    auto both = [&] {
                        fwd();
                        ops.attention_backward(AttentionKind::flash, dqkv.get(), dout.get(), qkv.get(), out.get(),
                                               lse.as<float>(), B, T, C, NH, NH);
                    };
                    double f_ms = variant == 0 ? time_ms(*mem, fwd, iters) : 0.0;
                    double fb_ms = time_ms(*mem, both, iters);
                    const char* name = variant == 0 ? "sixnd flash (deterministic)" : "sixnd flash (atomic dQ)";
                    if (variant == 0)
                        std::printf("| %s | %d | %d | %d | %d | %.3f | %.1f | %.3f | %.1f |\n", name, hs, T, B, NH, f_ms,
                                    fwd_flops / f_ms / 1e9, fb_ms, 3.5 * fwd_flops / fb_ms / 1e9);
                    else
                        std::printf("| %s | %d | %d | %d | %d | - | - | %.3f | %.1f |\n", name, hs, T, B, NH, fb_ms,
                                    3.5 * fwd_flops / fb_ms / 1e9);
                    std::fflush(stdout);
                }
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attention_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
