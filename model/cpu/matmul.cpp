// The CPU matmul engine behind every Linear (see matmul.h for the contract).
// With oneDNN: one matmul primitive per (data type, shape, transposes, accumulate, bias), built
// on first use and cached, since building one costs far more than running a small one. Operands
// are described with plain strides in the layouts the model already has (a weight [OC,C] used as
// W^T is the "ba" layout of a [C,OC] matrix), so nothing is transposed or copied before the call.
// Accumulation is oneDNN's sum post-op: c = acc + c_old in FP32, rounded once.
// bf16 runs on oneDNN's bf16 kernels where the CPU has BF16 dot products (AVX512-BF16 / AMX,
// FP32 accumulation); elsewhere on the packed GEMM (gemm_packed.h), which widens bf16 to FP32 as
// it packs and multiplies, and rounds once: through oneDNN the bf16 operands would first be
// widened into whole FP32 copies and the FP32 result rounded in another pass, memory-bound passes
// that took 5-9% of a training step on two cores.
// Without oneDNN, or for a case oneDNN cannot run on this CPU, the packed GEMM does the work.
#include "model/cpu/matmul.h"

#ifdef SIXND_HAVE_ONEDNN
#include <dnnl.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "model/cpu/kernels.h"
#endif

#include "core/cpu_features.h"
#include "core/error.h"
#include "model/cpu/gemm_packed.h"
#include "model/cpu/weight_copies.h"

namespace sixnd::cpu {

#ifdef SIXND_HAVE_ONEDNN

namespace {

// SIXND_CPU_ISA caps oneDNN too, before anything asks it for its ISA (it can be set only then).
void cap_onednn_isa() {
    static std::once_flag once;
    std::call_once(once, [] {
        const std::string& cap = cpu_features().isa_cap;
        if (cap == "native") return;
        const auto isa = cap == "avx2" ? dnnl::cpu_isa::avx2 : dnnl::cpu_isa::avx512_core;
        if (dnnl::set_max_cpu_isa(isa) != dnnl::status::success)
            throw Error("SIXND_CPU_ISA", "oneDNN was used before its instruction set could be capped to " + cap);
    });
}

}  // namespace

struct Matmul::Impl {
    using Key = std::tuple<bool, int, int, int, bool, bool, bool, bool>;  // f32, M, N, K, a_trans, b_trans, accumulate, bias
    struct Prim {
        dnnl::memory::desc a, b, bias, c;
        dnnl::matmul prim;
        // oneDNN has no kernel for this case on this CPU (bf16 below AVX-512): the packed GEMM
        // runs it instead of failing the whole run.
        bool fallback = false;
    };
    struct IsaCap {
        IsaCap() { cap_onednn_isa(); }
    } isa_cap;  // first member: the cap is in place before the engine exists
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::mutex mu;
    std::map<Key, Prim> cache;

    const Prim& get(DType dtype, const GemmShape& s, bool has_bias) {
        std::lock_guard<std::mutex> lock(mu);
        Key key{dtype == DType::f32, s.M, s.N, s.K, s.a_trans, s.b_trans, s.accumulate, has_bias};
        auto it = cache.find(key);
        if (it != cache.end()) return it->second;
        using md = dnnl::memory::desc;
        using dims = dnnl::memory::dims;
        const auto dt = dtype == DType::f32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
        const dnnl::memory::dim M = s.M, N = s.N, K = s.K;
        Prim p;
        p.a = md({M, K}, dt, s.a_trans ? dims{1, M} : dims{K, 1});
        p.b = md({K, N}, dt, s.b_trans ? dims{1, K} : dims{N, 1});
        p.c = md({M, N}, dt, dims{N, 1});
        if (has_bias) p.bias = md({1, N}, dt, dims{N, 1});
        dnnl::primitive_attr attr;
        if (s.accumulate) {
            dnnl::post_ops po;
            po.append_sum(1.0f);
            attr.set_post_ops(po);
        }
        auto desc = has_bias ? dnnl::matmul::desc(p.a, p.b, p.bias, p.c) : dnnl::matmul::desc(p.a, p.b, p.c);
        try {
            p.prim = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, engine));
        } catch (const dnnl::error&) {
            p.fallback = true;
        }
        return cache.emplace(key, std::move(p)).first->second;
    }

    // oneDNN's primitive for shape s, or the packed GEMM where it has none.
    void execute(DType dtype, void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
        const Prim& p = get(dtype, s, bias != nullptr);
        if (p.fallback) {
            gemm_packed(dtype, c, a, b, nullptr, bias, s);
            return;
        }
        auto mem = [&](const dnnl::memory::desc& d, const void* ptr) {
            return dnnl::memory(d, engine, const_cast<void*>(ptr));
        };
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, mem(p.a, a)}, {DNNL_ARG_WEIGHTS, mem(p.b, b)}, {DNNL_ARG_DST, mem(p.c, c)}};
        if (bias) args.emplace(DNNL_ARG_BIAS, mem(p.bias, bias));
        p.prim.execute(stream, args);
        stream.wait();
    }

};

Matmul::Matmul(DType dtype, Bf16Math math, MemoryBackend* copies_mem)
    : dtype_(dtype), impl_(std::make_unique<Impl>()) {
    widen_ = dtype == DType::bf16 &&
             (math == Bf16Math::fp32 || (math == Bf16Math::automatic && !cpu_features().bf16_matmul_native()));
    if (widen_ && copies_mem) copies_ = std::make_unique<WeightCopies>(*copies_mem);
}
Matmul::~Matmul() = default;

void Matmul::run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s, void* gelu_out) {
    // FP32 products over a stored-transposed a (the weight gradients, dW += dout^T inp, and
    // Muon's tall matrices) sum over the tokens: oneDNN splits that sum between threads, so the
    // bits followed the thread count (7e-9 at 1 against 2 threads). The packed GEMM's K-order
    // chain gives the same bits on any, at 1.02-1.05x oneDNN's time (bench/RESULTS.md).
    if (widen_ || (dtype_ == DType::f32 && s.a_trans)) {
        run_packed(c, a, b, bias, s, gelu_out);
        return;
    }
    impl_->execute(dtype_, c, a, b, bias, s);
    if (!gelu_out) return;
    const size_t n = static_cast<size_t>(s.M) * s.N;
    if (dtype_ == DType::f32) gelu_forward(static_cast<float*>(gelu_out), static_cast<const float*>(c), n);
    else gelu_forward(static_cast<bf16*>(gelu_out), static_cast<const bf16*>(c), n);
}

const char* Matmul::engine() { return "oneDNN"; }

std::string Matmul::engine_isa() {
    cap_onednn_isa();
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::sse41: return "sse41";
        case dnnl::cpu_isa::avx: return "avx";
        case dnnl::cpu_isa::avx2: return "avx2";
        case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
        case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
        case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
        case dnnl::cpu_isa::avx512_core: return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
        default: return "other";
    }
}

#else

struct Matmul::Impl {};  // nothing to hold; complete only so that unique_ptr<Impl> compiles

// The packed GEMM does every product, whatever the CPU. There are no BF16 kernels to send bf16
// products to, so the switch that asks for them is refused rather than ignored.
Matmul::Matmul(DType dtype, Bf16Math, MemoryBackend* copies_mem) : dtype_(dtype), widen_(dtype == DType::bf16) {
    if (widen_ && cpu_features().bf16_matmul_switch == "bf16")
        throw Error("SIXND_BF16_MATMUL", "bf16 needs oneDNN's BF16 kernels, and this build has no oneDNN "
                                         "(-DSIXND_ONEDNN=OFF, or libdnnl not found): BF16 matmuls run in FP32 here");
    if (widen_ && copies_mem) copies_ = std::make_unique<WeightCopies>(*copies_mem);
}
Matmul::~Matmul() = default;

void Matmul::run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s, void* gelu_out) {
    run_packed(c, a, b, bias, s, gelu_out);
}

const char* Matmul::engine() { return "portable"; }

std::string Matmul::engine_isa() { return "none"; }

#endif

// A weight's panels come from the copies (b is stored [N][K] when b_trans, else [K][N]).
void Matmul::run_packed(void* c, const void* a, const void* b, const void* bias, const GemmShape& s, void* gelu_out) {
    const bf16* packed = nullptr;
    if (s.b_weight && copies_ && dtype_ == DType::bf16)
        packed = copies_->get(static_cast<const bf16*>(b), s.b_trans ? s.N : s.K, s.b_trans ? s.K : s.N, s.b_trans);
    gemm_packed(dtype_, c, a, b, packed, bias, s, gelu_out);
}

}  // namespace sixnd::cpu
