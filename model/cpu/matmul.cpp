// The CPU matmul engine behind every Linear (see matmul.h for the contract).
// With oneDNN: one matmul primitive per (shape, transposes, accumulate, bias), built on first
// use and cached, since building one costs far more than running a small one. Operands are
// described with plain strides in the layouts the model already has (a weight [OC,C] used as
// W^T is the "ba" layout of a [C,OC] matrix), so nothing is transposed or copied before the
// call; bf16 inputs run on oneDNN's bf16 kernels (AVX512-BF16 / AMX) with FP32 accumulation.
// Accumulation is oneDNN's sum post-op: c = acc + c_old in FP32, rounded once.
// Without oneDNN, or for a case oneDNN cannot run on this CPU, the portable blocked GEMM
// (matmul_portable.cpp) does the work.
#include "model/cpu/matmul.h"

#ifdef SIXND_HAVE_ONEDNN
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#endif

namespace sixnd::cpu {

#ifdef SIXND_HAVE_ONEDNN

struct Matmul::Impl {
    using Key = std::tuple<int, int, int, bool, bool, bool, bool>;  // M, N, K, a_trans, b_trans, accumulate, bias
    struct Prim {
        dnnl::memory::desc a, b, bias, c;
        dnnl::matmul prim;
        // oneDNN has no kernel for this case on this CPU (bf16 needs AVX-512): the portable
        // GEMM runs it instead of failing the whole run.
        bool portable = false;
    };
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::mutex mu;
    std::map<Key, Prim> cache;

    const Prim& get(DType dtype, const GemmShape& s, bool has_bias) {
        std::lock_guard<std::mutex> lock(mu);
        Key key{s.M, s.N, s.K, s.a_trans, s.b_trans, s.accumulate, has_bias};
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
};

Matmul::Matmul(DType dtype) : dtype_(dtype), impl_(std::make_unique<Impl>()) {}
Matmul::~Matmul() = default;

void Matmul::run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
    const Impl::Prim& p = impl_->get(dtype_, s, bias != nullptr);
    if (p.portable) {
        gemm_portable(dtype_, c, a, b, bias, s);
        return;
    }
    auto mem = [&](const dnnl::memory::desc& d, const void* ptr) {
        return dnnl::memory(d, impl_->engine, const_cast<void*>(ptr));
    };
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, mem(p.a, a)}, {DNNL_ARG_WEIGHTS, mem(p.b, b)}, {DNNL_ARG_DST, mem(p.c, c)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, mem(p.bias, bias));
    p.prim.execute(impl_->stream, args);
    impl_->stream.wait();
}

const char* Matmul::engine() { return "oneDNN"; }

#else

struct Matmul::Impl {};  // nothing to hold; complete only so that unique_ptr<Impl> compiles

Matmul::Matmul(DType dtype) : dtype_(dtype) {}
Matmul::~Matmul() = default;

void Matmul::run(void* c, const void* a, const void* b, const void* bias, const GemmShape& s) {
    gemm_portable(dtype_, c, a, b, bias, s);
}

const char* Matmul::engine() { return "portable"; }

#endif

}  // namespace sixnd::cpu
