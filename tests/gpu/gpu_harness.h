// Shared by the gpu tests: runs one op on the CUDA backend and on a reference backend with
// the same inputs. Each Tensor lives on both sides; X tensors are stored in the backend's
// dtype on the device under test, and in FP32 on the reference (rounded to bf16 first when the
// device side is bf16, so the reference sees exactly the device's inputs).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/memory.h"
#include "model/cpu/cpu_ops.h"
#include "model/cuda/cuda_ops.h"
#include "model/ops.h"
#include "tests/util/test_util.h"

namespace sixnd::test {

#define SIXND_SKIP_WITHOUT_CUDA()                                                       \
    do {                                                                                \
        std::string why_;                                                               \
        if (!::sixnd::cuda_device_available(&why_))                                     \
            GTEST_SKIP() << "no CUDA device, so the CUDA op is not run (" << why_ << ")"; \
    } while (0)

enum class Kind { x, f32, i32 };

// One buffer on each side: ref (host, FP32) and dev (device, the tested dtype for X).
struct Tensor {
    Kind kind;
    size_t n = 0;
    DeviceBuffer ref, dev;
    void* r() const { return ref.get(); }
    void* d() const { return dev.get(); }
    float* rf() const { return ref.as<float>(); }
    float* df() const { return dev.as<float>(); }
    int32_t* di() const { return dev.as<int32_t>(); }
    int32_t* ri() const { return ref.as<int32_t>(); }
};

class Sides {
public:
    Sides(DType dtype, std::unique_ptr<Ops> (*make_ref)(DType, MemoryBackend&), DType ref_dtype)
        : dtype_(dtype), ref_dtype_(ref_dtype), dev_mem_(make_cuda_memory(0)) {
        ref_ops_ = make_ref(ref_dtype, host_);
        dev_ops_ = make_cuda_ops(dtype, *dev_mem_);
    }
    Ops& ref() { return *ref_ops_; }
    Ops& dev() { return *dev_ops_; }
    Ops& dev_with(const CudaOpsOptions& o) {
        alt_ops_ = make_cuda_ops(dtype_, *dev_mem_, o);
        return *alt_ops_;
    }
    DType dtype() const { return dtype_; }
    MemoryBackend& dev_memory() { return *dev_mem_; }
    // A Kind::x tensor k elements in, on each side: an operand or result off 16-byte alignment, as
    // a tensor inside the flat parameter buffer (or its gradient) can be.
    void* r_at(const Tensor& t, size_t k) const { return static_cast<char*>(t.r()) + k * dtype_size(ref_dtype_); }
    void* d_at(const Tensor& t, size_t k) const { return static_cast<char*>(t.d()) + k * dtype_size(dtype_); }

    // Rounds v to what the device stores (bf16) so both sides start from the same values.
    Tensor x(std::vector<float>& v) {
        if (dtype_ == DType::bf16)
            for (auto& e : v) e = static_cast<float>(bf16(e));
        Tensor t = alloc(Kind::x, v.size());
        put(t, v);
        return t;
    }
    Tensor f(const std::vector<float>& v) {
        Tensor t = alloc(Kind::f32, v.size());
        put(t, v);
        return t;
    }
    Tensor i(const std::vector<int32_t>& v) {
        Tensor t = alloc(Kind::i32, v.size());
        std::memcpy(t.r(), v.data(), v.size() * 4);
        dev_mem_->copy_to_device(t.d(), v.data(), v.size() * 4);
        return t;
    }
    Tensor alloc(Kind k, size_t n) {
        Tensor t;
        t.kind = k;
        t.n = n;
        t.ref = DeviceBuffer(&host_, n * (k == Kind::x ? dtype_size(ref_dtype_) : 4), MemCategory::activations);
        t.dev = DeviceBuffer(dev_mem_.get(), n * (k == Kind::x ? dtype_size(dtype_) : 4), MemCategory::activations);
        return t;
    }
    void put(Tensor& t, const std::vector<float>& v) {
        write_side(t.r(), t.kind == Kind::x ? ref_dtype_ : DType::f32, v, host_);
        write_side(t.d(), t.kind == Kind::x ? dtype_ : DType::f32, v, *dev_mem_);
    }
    // Fills the device side with NaN (bf16 and f32 alike: all bits set), so an element the
    // op fails to write cannot pass.
    void poison(Tensor& t) { dev_mem_->memset(t.d(), 0xff, t.dev.bytes()); }
    std::vector<float> get_ref(const Tensor& t) { return read_side(t.r(), side_type(t, ref_dtype_), t.n, host_); }
    std::vector<float> get_dev(const Tensor& t) { return read_side(t.d(), side_type(t, dtype_), t.n, *dev_mem_); }
    // ||dev - ref|| / ||ref|| of one tensor, and a failure message naming it when over tol.
    ::testing::AssertionResult close(const Tensor& t, double tol, const char* what) {
        std::vector<float> a = get_dev(t), b = get_ref(t);
        for (size_t k = 0; k < a.size(); k++)
            if (!std::isfinite(a[k]))
                return ::testing::AssertionFailure() << what << ": element " << k << " is " << a[k];
        double e = rel_error(a, b);
        if (e <= tol) return ::testing::AssertionSuccess() << what << " rel error " << e;
        return ::testing::AssertionFailure() << what << ": rel error " << e << " > " << tol;
    }

private:
    static DType side_type(const Tensor& t, DType x_type) { return t.kind == Kind::x ? x_type : DType::f32; }
    static void write_side(void* dst, DType type, const std::vector<float>& v, MemoryBackend& mem) {
        if (type == DType::bf16) {
            std::vector<bf16> b = to_bf16(v);
            mem.copy_to_device(dst, b.data(), b.size() * 2);
        } else {
            mem.copy_to_device(dst, v.data(), v.size() * 4);
        }
    }
    static std::vector<float> read_side(const void* src, DType type, size_t n, MemoryBackend& mem) {
        if (type == DType::bf16) {
            std::vector<bf16> b(n);
            mem.copy_to_host(b.data(), src, n * 2);
            return from_bf16(b);
        }
        std::vector<float> v(n);
        mem.copy_to_host(v.data(), src, n * 4);
        return v;
    }

    DType dtype_, ref_dtype_;
    HostMemory host_;
    std::unique_ptr<MemoryBackend> dev_mem_;
    std::unique_ptr<Ops> ref_ops_, dev_ops_, alt_ops_;
};

// A CUDA op against the CPU op (in FP32) with the same inputs, once per tested dtype; tol()
// is the relative error the dtype allows, rnd() draws inputs from a seed fixed per suite.
class CudaVsCpuTest : public ::testing::TestWithParam<DType> {
protected:
    explicit CudaVsCpuTest(uint64_t seed) : seed_(seed) {}
    void SetUp() override {
        SIXND_SKIP_WITHOUT_CUDA();
        s = std::make_unique<Sides>(
            GetParam(), [](DType d, MemoryBackend& m) { return make_cpu_ops(d, m); }, DType::f32);
    }
    double tol() const { return GetParam() == DType::bf16 ? 1e-2 : 1e-4; }
    std::vector<float> rnd(size_t n, float lo = -1.0f, float hi = 1.0f) { return random_floats(n, seed_++, lo, hi); }
    std::unique_ptr<Sides> s;

private:
    uint64_t seed_;
};

}  // namespace sixnd::test
