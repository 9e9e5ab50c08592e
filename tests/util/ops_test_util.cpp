#include "tests/util/ops_test_util.h"

#include <cmath>
#include <stdexcept>

namespace sixnd::test {

XBuf::XBuf(DType dt, const std::vector<float>& values) : dt_(dt) {
    if (dt == DType::f32) {
        f_ = values;
    } else {
        h_.resize(values.size());
        for (size_t i = 0; i < values.size(); i++) h_[i] = bf16(values[i]);
    }
}

XBuf::XBuf(DType dt, size_t n) : XBuf(dt, std::vector<float>(n, 0.0f)) {}

std::vector<float> XBuf::values() const {
    if (dt_ == DType::f32) return f_;
    std::vector<float> out(h_.size());
    for (size_t i = 0; i < h_.size(); i++) out[i] = static_cast<float>(h_[i]);
    return out;
}

std::vector<float> round_to(DType dt, const std::vector<float>& v) { return XBuf(dt, v).values(); }

std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
                                 double h) {
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); i++) {
        const double x0 = x[i];
        x[i] = x0 + h;
        const double fp = f(x);
        x[i] = x0 - h;
        const double fm = f(x);
        x[i] = x0;
        g[i] = (fp - fm) / (2 * h);
    }
    return g;
}

double weighted_sum(const std::vector<double>& y, const std::vector<float>& w) {
    if (y.size() != w.size()) throw std::runtime_error("weighted_sum: size mismatch");
    double s = 0;
    for (size_t i = 0; i < y.size(); i++) s += y[i] * w[i];
    return s;
}

double bf16_half_ulp(double y) {
    int e = 0;
    std::frexp(y, &e);  // |y| = m 2^e, m in [0.5, 1); bf16 keeps 8 significant bits
    return std::ldexp(1.0, e - 9);
}

}  // namespace sixnd::test
