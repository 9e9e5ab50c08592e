// The CPU matmul on GPT-2's Linear shapes at M tokens: milliseconds per call of each Linear's
// forward (out = inp @ W^T), backward-input (dinp = dout @ W) and backward-weight
// (dW += dout^T @ inp) product, FP32 against BF16, where BF16 computes as the CpuOps would
// (natively, or on the packed GEMM in FP32 arithmetic where the CPU has no BF16 dot products;
// SIXND_CPU_ISA caps it). Each round first writes a Linear's weights (as the optimizer does once
// per step), then times one forward, backward-input and backward-weight call, so a BF16 path that
// keeps packed copies of the weights pays for refreshing them once per round, as in training.
// FP32 and BF16 alternate Linear by Linear in one process.
// Prints one JSON line per shape and product.
//   matmul_bench [--tokens M] [--rounds R] [--model gpt2-124m|demo]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <omp.h>

#include "core/bf16.h"
#include "core/memory.h"
#include "core/rng.h"
#include "model/cpu/cpu_ops.h"

using namespace sixnd;

namespace {

struct Linear {
    const char* name;
    int C, OC;
};

template <typename X>
std::vector<X> random_vec(size_t n, Rng& rng) {
    std::vector<X> v(n);
    for (auto& x : v) x = from_f32<X>(static_cast<float>(rng.normal()) * 0.05f);
    return v;
}

// One dtype's CPU ops and the Linears' buffers, timed one Linear at a time.
template <typename X>
class Bench {
public:
    Bench(DType dtype, const std::vector<Linear>& lins, int M)
        : lins_(lins), M_(M), ops_(make_cpu_ops(dtype, mem_)), fwd_(lins.size()), bwd_(lins.size()) {
        Rng rng(1);
        for (const Linear& l : lins) {
            Bufs b;
            b.w = random_vec<X>(size_t(l.OC) * l.C, rng);
            // The weights in parameter memory, as the model's are (where the widened path keeps copies).
            b.wbuf = DeviceBuffer(&mem_, b.w.size() * sizeof(X), MemCategory::params);
            b.inp = random_vec<X>(size_t(M) * l.C, rng);
            b.out.resize(size_t(M) * l.OC);
            b.dout = random_vec<X>(size_t(M) * l.OC, rng);
            b.dinp.resize(size_t(M) * l.C);
            b.dw.resize(size_t(l.OC) * l.C);
            bufs_.push_back(std::move(b));
        }
    }

    // Linear i's weights written (the optimizer's write), then its three products; timed unless
    // a warm-up (primitives built, buffers touched).
    void run(size_t i, bool timed) {
        using clock = std::chrono::steady_clock;
        const Linear& l = lins_[i];
        Bufs& b = bufs_[i];
        // Every weight changes (its sign: values stay bounded).
        for (auto& w : b.w) w = from_f32<X>(-to_f32(w));
        std::copy(b.w.begin(), b.w.end(), static_cast<X*>(b.wbuf.get()));
        const X* w = static_cast<X*>(b.wbuf.get());
        auto t0 = clock::now();
        ops_->matmul_forward(b.out.data(), nullptr, b.inp.data(), w, nullptr, M_, l.C, l.OC);
        auto t1 = clock::now();
        ops_->matmul_backward(b.dinp.data(), b.dw.data(), nullptr, b.dout.data(), b.inp.data(), w, M_, l.C, l.OC);
        auto t2 = clock::now();
        if (!timed) return;
        fwd_[i] += std::chrono::duration<double>(t1 - t0).count();
        bwd_[i] += std::chrono::duration<double>(t2 - t1).count();
    }

    void print(const char* dname, int rounds) const {
        for (size_t i = 0; i < lins_.size(); i++) {
            nlohmann::json j{{"dtype", dname},
                             {"linear", lins_[i].name},
                             {"M", M_},
                             {"C", lins_[i].C},
                             {"OC", lins_[i].OC},
                             {"forward_ms", fwd_[i] / rounds * 1e3},
                             {"backward_ms", bwd_[i] / rounds * 1e3},
                             {"threads", omp_get_max_threads()},
                             {"interleaved", true}};
            std::printf("%s\n", j.dump().c_str());
        }
    }

private:
    struct Bufs {
        DeviceBuffer wbuf;
        std::vector<X> w, inp, out, dout, dinp, dw;
    };
    const std::vector<Linear>& lins_;
    int M_;
    HostMemory mem_;
    std::unique_ptr<Ops> ops_;
    std::vector<Bufs> bufs_;
    std::vector<double> fwd_, bwd_;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sixnd CPU matmul benchmark"};
    int M = 256, rounds = 3;
    std::string model = "gpt2-124m";
    app.add_option("--tokens", M, "M: tokens per call (B*T)")->check(CLI::Range(1, 1 << 16));
    app.add_option("--rounds", rounds)->check(CLI::Range(1, 1 << 20));
    app.add_option("--model", model, "gpt2-124m (C 768, vocab 50304) or demo (C 384, vocab 4096)")
        ->check(CLI::IsMember({"gpt2-124m", "demo"}));
    CLI11_PARSE(app, argc, argv);
    const int C = model == "demo" ? 384 : 768, V = model == "demo" ? 4096 : 50304;
    const std::vector<Linear> lins{
        {"qkv", C, 3 * C}, {"attn_proj", C, C}, {"fc", C, 4 * C}, {"fc_proj", 4 * C, C}, {"lm_head", C, V}};
    try {
        std::printf("%s\n", cpu_host_json().dump().c_str());
        Bench<float> f32(DType::f32, lins, M);
        Bench<bf16> b16(DType::bf16, lins, M);
        // FP32 and BF16 take turns on each Linear, and which goes first alternates, so that a
        // shared machine's slow minutes fall on both alike.
        for (int r = 0; r <= rounds; r++)
            for (size_t i = 0; i < lins.size(); i++)
                for (int side = 0; side < 2; side++) {
                    if ((side + r + static_cast<int>(i)) % 2 == 0) f32.run(i, r > 0);
                    else b16.run(i, r > 0);
                }
        f32.print("fp32", rounds);
        b16.print("bf16", rounds);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "matmul_bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
