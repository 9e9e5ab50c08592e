// The incomplete beta function by its continued fraction (evaluated with the modified Lentz
// method), using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) to stay where the fraction converges
// fast (x < (a+1)/(a+b+2)). The Student-t tail is I_{df/(df+t^2)}(df/2, 1/2).
#include "train/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"

namespace sixnd {

double mean(const std::vector<double>& x) {
    if (x.empty()) return 0.0;
    const double n = static_cast<double>(x.size());
    double s = 0;
    for (double v : x) s += v;
    if (!std::isinf(s)) return s / n;
    // Values near the largest double overflow their sum, not their mean (an infinite value
    // keeps it infinite).
    s = 0;
    for (double v : x) s += v / n;
    return s;
}

double sample_std(const std::vector<double>& x) {
    if (x.size() < 2) return 0.0;
    const double m = mean(x);
    // Deviations in units of the largest, so that their squares neither overflow (values past
    // ~1e154) nor vanish (spreads below ~1e-154).
    double scale = 0;
    for (double v : x) scale = std::max(scale, std::fabs(v - m));
    if (scale == 0 || !std::isfinite(scale)) return scale;
    double ss = 0;
    for (double v : x) ss += ((v - m) / scale) * ((v - m) / scale);
    return scale * std::sqrt(ss / static_cast<double>(x.size() - 1));
}

namespace {

// The continued fraction of I_x(a,b) * a * B(a,b) / (x^a (1-x)^b): 1/(1+ d1/(1+ d2/(1+ ...))) with
// d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)) and d_{2m} = m(b-m) x / ((a+2m-1)(a+2m)).
double beta_fraction(double a, double b, double x) {
    const double tiny = 1e-300, eps = 1e-16;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (std::fabs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double f = d;
    for (int m = 1; m <= 10000; m++) {
        const double m2 = 2.0 * m;
        for (int half = 0; half < 2; half++) {
            const double coef = half == 0 ? m * (b - m) * x / ((a + m2 - 1.0) * (a + m2))
                                          : -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
            d = 1.0 + coef * d;
            if (std::fabs(d) < tiny) d = tiny;
            c = 1.0 + coef / c;
            if (std::fabs(c) < tiny) c = tiny;
            d = 1.0 / d;
            const double delta = c * d;
            f *= delta;
            if (half == 1 && std::fabs(delta - 1.0) < eps) return f;
        }
    }
    return f;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
    if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) throw Error("incomplete_beta", "needs a, b > 0 and 0 <= x <= 1");
    if (x == 0 || x == 1) return x;
    const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
    const double front = std::exp(log_front);
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
    return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

double student_t_cdf(double t, double df) {
    if (!(df > 0)) throw Error("student_t_cdf", "degrees of freedom must be positive");
    if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
    const double tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));  // P(T > |t|)
    return t >= 0 ? 1.0 - tail : tail;
}

WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() < 2 || b.size() < 2) throw Error("welch_t_test", "needs at least two values in each sample");
    for (const std::vector<double>* x : {&a, &b})
        for (double v : *x)
            if (!std::isfinite(v)) throw Error("welch_t_test", "needs finite values, got " + std::to_string(v));
    const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
    // Standard errors, and df from their ratio: the variances' squares leave the doubles for
    // values past ~1e77 or spreads below ~1e-77.
    const double sa = sample_std(a) / std::sqrt(na), sb = sample_std(b) / std::sqrt(nb);
    const double diff = mean(a) - mean(b);
    WelchResult r;
    if (sa == 0 && sb == 0) {
        r.df = na + nb - 2;
        r.t = diff == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), diff);
        r.p = diff == 0 ? 1.0 : 0.0;
        return r;
    }
    r.t = diff / std::hypot(sa, sb);
    const double ua = std::pow(sa / std::max(sa, sb), 2), ub = std::pow(sb / std::max(sa, sb), 2);
    r.df = (ua + ub) * (ua + ub) / (ua * ua / (na - 1) + ub * ub / (nb - 1));
    r.p = incomplete_beta(r.df / 2.0, 0.5, r.df / (r.df + r.t * r.t));
    return r;
}

}  // namespace sixnd
