// Helpers for the op tests: buffers in an op set's storage type, and central finite
// differences of a float64 reference.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "core/bf16.h"
#include "core/dtype.h"

namespace sixnd::test {

// A host buffer in storage type dt, filled from floats (rounded to nearest even for bf16).
class XBuf {
public:
    XBuf(DType dt, const std::vector<float>& values);
    XBuf(DType dt, size_t n);  // zeros
    void* ptr() { return dt_ == DType::f32 ? static_cast<void*>(f_.data()) : static_cast<void*>(h_.data()); }
    const void* ptr() const {
        return dt_ == DType::f32 ? static_cast<const void*>(f_.data()) : static_cast<const void*>(h_.data());
    }
    size_t size() const { return dt_ == DType::f32 ? f_.size() : h_.size(); }
    std::vector<float> values() const;

private:
    DType dt_;
    std::vector<float> f_;
    std::vector<bf16> h_;
};

// The values as storage type dt holds them.
std::vector<float> round_to(DType dt, const std::vector<float>& v);

// grad[i] = (f(x + h e_i) - f(x - h e_i)) / 2h, all in double.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
                                 double h = 1e-5);

// sum_i w[i] * y[i]: the scalar whose gradient with respect to y is w (a given "dout").
double weighted_sum(const std::vector<double>& y, const std::vector<float>& w);

// Half a unit in the last place of bf16 at y: the most a single round-to-nearest can move y.
double bf16_half_ulp(double y);

}  // namespace sixnd::test
