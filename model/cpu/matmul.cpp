// The CPU matmul engine behind every Linear (see matmul.h for the contract).
// With oneDNN: one matmul primitive per (data type, shape, transposes, accumulate, bias), built
// on first use and cached, since building one costs far more than running a small one. Operands
// are described with plain strides in the layouts the model already has (a weight [OC,C] used as
// W^T is the "ba" layout of a [C,OC] matrix), so nothing is transposed or copied before the call.
// Accumulation is oneDNN's sum post-op: c = acc + c_old in FP32, rounded once.
// bf16 runs either on oneDNN's bf16 kernels (AVX512-BF16 / AMX, FP32 accumulation) or, on CPUs
// without BF16 dot products, widened: blocks of the operands are converted to FP32 (one pass,
// O(MK + KN)), oneDNN's FP32 kernel multiplies them, and the FP32 result plus bias plus the old
// c is rounded to bf16 once. The problem is cut along its largest dimension into chunks whose
// FP32 copies fit the widen budget (kWidenBudget floats), so the workspace stays small even for
// the LM head. A weight operand kept in FP32 (weight_copies.h) is read in place: the cut then runs
// along M or along b's stored rows, so that each chunk of it is dense.
// Without oneDNN, or for a case oneDNN cannot run on this CPU, the portable blocked GEMM
// (matmul_portable.cpp) does the work.
#include "model/cpu/matmul.h"

#ifdef SIXND_HAVE_ONEDNN
#include <dnnl.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/cpu_features.h"
#include "core/error.h"
#include "model/cpu/kernels.h"
#include "model/cpu/weight_copies.h"
#endif

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

// dst[rows, cols] (dense FP32) = src[rows, cols] with row stride ld.
void widen_block(float* dst, const bf16* src, int rows, int cols, size_t ld) {
#pragma omp parallel for schedule(static) if(worth_threads(size_t(rows) * cols))
    for (int r = 0; r < rows; r++) {
        const bf16* s = src + r * ld;
        float* d = dst + static_cast<size_t>(r) * cols;
#pragma omp simd
        for (int c = 0; c < cols; c++) d[c] = to_f32(s[c]);
    }
}

// c[rows, cols] (row stride ld) = round(acc[rows, cols] + bias[cols] + (accumulate ? c : 0)).
void round_block(bf16* c, size_t ld, const float* acc, const bf16* bias, bool accumulate, int rows, int cols) {
#pragma omp parallel for schedule(static) if(worth_threads(size_t(rows) * cols))
    for (int r = 0; r < rows; r++) {
        bf16* cr = c + r * ld;
        const float* ar = acc + static_cast<size_t>(r) * cols;
#pragma omp simd
        for (int j = 0; j < cols; j++) {
            float x = ar[j];
            if (bias) x += to_f32(bias[j]);
            if (accumulate) x += to_f32(cr[j]);
            cr[j] = from_f32<bf16>(x);
        }
    }
}

}  // namespace

struct Matmul::Impl {
    using Key = std::tuple<bool, int, int, int, bool, bool, bool, bool>;  // f32, M, N, K, a_trans, b_trans, accumulate, bias
    struct Prim {
        dnnl::memory::desc a, b, bias, c;
        dnnl::matmul prim;
        // oneDNN has no kernel for this case on this CPU (bf16 below AVX-512): the portable
        // GEMM runs it instead of failing the whole run.
        bool portable = false;
    };
    struct IsaCap {
        IsaCap() { cap_onednn_isa(); }
    } isa_cap;  // first member: the cap is in place before the engine exists
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::mutex mu;
    std::map<Key, Prim> cache;
    std::vector<float> wa, wb, wc;  // widened chunks of a, b and the FP32 result
    // The a whose whole FP32 copy wa holds (in a's memory order), for GemmShape::a_again.
    const bf16* wa_whole = nullptr;
    size_t wa_whole_n = 0;
    std::unique_ptr<WeightCopies> copies;  // FP32 copies of weights on the widened path, if kept

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
            p.portable = true;
        }
        return cache.emplace(key, std::move(p)).first->second;
    }

    // oneDNN's primitive for shape s, or the portable GEMM where it has none.
    void execute(DType dtype, void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
        const Prim& p = get(dtype, s, bias != nullptr);
        if (p.portable) {
            gemm_portable(dtype, c, a, b, bias, s);
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

    // bf16 c (+)= op(a) op(b) (+ bias) through FP32 kernels, chunk by chunk (see the top of the
    // file). b32: b already in FP32 in b's layout (a kept weight copy), or null. A K chunk
    // accumulates into the FP32 result, which is rounded after the last one; an M or N chunk is
    // rounded as soon as it is done.
    void run_widened(bf16* c, const bf16* a, const bf16* b, const float* b32, const bf16* bias, const GemmShape& s,
                     size_t budget) {
        const size_t M = s.M, N = s.N, K = s.K;
        const size_t ext[3] = {M, N, K};
        // The cut (0: M, 1: N, 2: K) is the largest dimension; with b in FP32 already, the larger
        // of M and the one along b's stored rows, so that every chunk of b32 is dense.
        const int brows = s.b_trans ? 1 : 2;
        const int dim = b32 ? (M >= ext[brows] ? 0 : brows) : (M >= N && M >= K ? 0 : (N >= K ? 1 : 2));
        // FP32 floats the copies take: a [M,K], b [K,N] unless given, c [M,N]; `fixed` the part
        // the cut leaves whole, `per_unit` what each unit of the cut dimension adds.
        size_t fixed = 0, per_unit = 0;
        auto operand = [&](int d1, int d2) {
            if (d1 == dim) per_unit += ext[d2];
            else if (d2 == dim) per_unit += ext[d1];
            else fixed += ext[d1] * ext[d2];
        };
        operand(0, 2);
        if (!b32) operand(2, 1);
        operand(0, 1);
        const size_t extent = ext[dim];
        size_t chunk = extent;
        if (fixed + per_unit * extent > budget)
            chunk = std::min(extent, std::max<size_t>(64, (budget > fixed ? budget - fixed : 0) / per_unit / 64 * 64));
        size_t m0 = 0, n0 = 0, k0 = 0, mc = M, nc = N, kc = K;
        // a is widened whole when no chunk cuts M or K; its copy is then dense in a's memory order.
        const bool a_whole = dim == 1 || chunk == extent;
        const bool reuse_a = s.a_again && a_whole && wa_whole == a && wa_whole_n == M * K;
        wa_whole = nullptr;
        for (size_t start = 0; start < extent; start += chunk) {
            const size_t len = std::min(chunk, extent - start);
            (dim == 0 ? m0 : dim == 1 ? n0 : k0) = start;
            (dim == 0 ? mc : dim == 1 ? nc : kc) = len;
            const bool first = start == 0, last = start + len == extent;
            wa.resize(std::max(wa.size(), mc * kc));
            wc.resize(std::max(wc.size(), mc * nc));
            // a (b) is widened once when the chunks cut only N (M).
            if ((dim != 1 || first) && !reuse_a) {
                if (s.a_trans) widen_block(wa.data(), a + k0 * M + m0, kc, mc, M);
                else widen_block(wa.data(), a + m0 * K + k0, mc, kc, K);
            }
            const float* bp = wb.data();
            if (b32) {
                bp = b32 + (s.b_trans ? n0 * K + k0 : k0 * N + n0);
            } else if (dim != 0 || first) {
                wb.resize(std::max(wb.size(), kc * nc));
                bp = wb.data();
                if (s.b_trans) widen_block(wb.data(), b + n0 * K + k0, nc, kc, K);
                else widen_block(wb.data(), b + k0 * N + n0, kc, nc, N);
            }
            const GemmShape part{int(mc), int(nc), int(kc), s.a_trans, s.b_trans, dim == 2 && !first};
            execute(DType::f32, wc.data(), wa.data(), bp, nullptr, part);
            if (dim != 2 || last)
                round_block(c + m0 * N + n0, N, wc.data(), bias ? bias + n0 : nullptr, s.accumulate, mc, nc);
        }
        if (a_whole) {
            wa_whole = a;
            wa_whole_n = M * K;
        }
    }
};

Matmul::Matmul(DType dtype, Bf16Math math, size_t widen_budget, MemoryBackend* copies_mem)
    : dtype_(dtype), widen_budget_(widen_budget), impl_(std::make_unique<Impl>()) {
    widen_ = dtype == DType::bf16 &&
             (math == Bf16Math::fp32 || (math == Bf16Math::automatic && !cpu_features().native_bf16()));
    if (widen_ && copies_mem) impl_->copies = std::make_unique<WeightCopies>(*copies_mem);
}
Matmul::~Matmul() = default;

void Matmul::run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
    if (widen_) {
        const bf16* b16 = static_cast<const bf16*>(b);
        const float* b32 = s.b_weight && impl_->copies ? impl_->copies->get(b16, size_t(s.K) * s.N) : nullptr;
        impl_->run_widened(static_cast<bf16*>(c), static_cast<const bf16*>(a), b16, b32,
                           static_cast<const bf16*>(bias), s, widen_budget_);
    }
    else
        impl_->execute(dtype_, c, a, b, bias, s);
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

// The portable GEMM widens bf16 tiles to FP32 as it packs them, whatever the CPU.
Matmul::Matmul(DType dtype, Bf16Math, size_t widen_budget, MemoryBackend*)
    : dtype_(dtype), widen_(dtype == DType::bf16), widen_budget_(widen_budget) {}
Matmul::~Matmul() = default;

void Matmul::run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
    gemm_portable(dtype_, c, a, b, bias, s);
}

const char* Matmul::engine() { return "portable"; }

std::string Matmul::engine_isa() { return "none"; }

#endif

}  // namespace sixnd::cpu
