// Welch's t-test and the Student-t CDF against references computed another way: closed forms of
// the t CDF for 1, 2 and 3 degrees of freedom and of I_x(a, b) for small integer a, b, and, for
// non-integer degrees of freedom, Simpson's rule on the t density itself.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "train/stats.h"

namespace {

using sixnd::incomplete_beta;
using sixnd::student_t_cdf;

const double kPi = 3.14159265358979323846;

// P(|T| > |t|) by Simpson's rule on the density over [0, |t|] (the density is smooth there).
double two_sided_by_quadrature(double t, double df) {
    const double c = std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2)) / std::sqrt(df * kPi);
    auto f = [&](double x) { return c * std::pow(1 + x * x / df, -(df + 1) / 2); };
    const int n = 200000;
    const double h = std::fabs(t) / n;
    double s = f(0) + f(std::fabs(t));
    for (int i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * f(i * h);
    return 1 - 2 * s * h / 3;
}

TEST(Stats, IncompleteBetaClosedForms) {
    for (double x : {0.0, 0.01, 0.2, 0.5, 0.73, 0.99, 1.0}) {
        EXPECT_NEAR(incomplete_beta(3.5, 1, x), std::pow(x, 3.5), 1e-12) << x;
        EXPECT_NEAR(incomplete_beta(1, 2.5, x), 1 - std::pow(1 - x, 2.5), 1e-12) << x;
        // I_x(2, 3) = 6x^2 - 8x^3 + 3x^4
        EXPECT_NEAR(incomplete_beta(2, 3, x), 6 * x * x - 8 * x * x * x + 3 * x * x * x * x, 1e-12) << x;
        // I_x(1/2, 1/2) = (2/pi) asin(sqrt x)
        EXPECT_NEAR(incomplete_beta(0.5, 0.5, x), 2 / kPi * std::asin(std::sqrt(x)), 1e-12) << x;
    }
}

TEST(Stats, StudentTClosedForms) {
    for (double t : {-40.0, -3.1, -1.0, -0.2, 0.0, 0.5, 1.7, 4.0, 12.706}) {
        EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / kPi, 1e-12) << t;
        EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
        const double s3 = t / std::sqrt(3.0);
        EXPECT_NEAR(student_t_cdf(t, 3), 0.5 + (s3 / (1 + s3 * s3) + std::atan(s3)) / kPi, 1e-12) << t;
    }
    // Textbook two-sided 5% critical values.
    EXPECT_NEAR(2 * (1 - student_t_cdf(12.706205, 1)), 0.05, 1e-6);
    EXPECT_NEAR(2 * (1 - student_t_cdf(2.228139, 10)), 0.05, 1e-6);
    EXPECT_NEAR(2 * (1 - student_t_cdf(1.959964, 1e7)), 0.05, 1e-6);  // the normal limit
}

TEST(Stats, NonIntegerDegreesOfFreedomMatchQuadrature) {
    for (double df : {1.3, 2.71, 4.5, 17.25, 63.9})
        for (double t : {0.05, 0.8, 2.2, 5.5})
            EXPECT_NEAR(2 * (1 - student_t_cdf(t, df)), two_sided_by_quadrature(t, df), 1e-9) << df << " " << t;
}

TEST(Stats, WelchOnFixedNumbers) {
    const std::vector<double> a{3.412, 3.398, 3.431, 3.405}, b{3.371, 3.392, 3.366};
    // The definition written out: means, sample variances, t, Welch-Satterthwaite df.
    const double ma = (3.412 + 3.398 + 3.431 + 3.405) / 4, mb = (3.371 + 3.392 + 3.366) / 3;
    double ssa = 0, ssb = 0;
    for (double v : a) ssa += (v - ma) * (v - ma);
    for (double v : b) ssb += (v - mb) * (v - mb);
    const double va = ssa / 3 / 4, vb = ssb / 2 / 3;
    const double t = (ma - mb) / std::sqrt(va + vb);
    const double df = (va + vb) * (va + vb) / (va * va / 3 + vb * vb / 2);
    const sixnd::WelchResult r = sixnd::welch_t_test(a, b);
    EXPECT_NEAR(r.t, t, 1e-9);
    EXPECT_NEAR(r.df, df, 1e-9);
    EXPECT_NEAR(r.p, two_sided_by_quadrature(t, df), 1e-6);
    EXPECT_GT(r.p, 0.001);
    EXPECT_LT(r.p, 0.05);
    EXPECT_NEAR(sixnd::sample_std({1, 2, 3, 4}), std::sqrt(5.0 / 3.0), 1e-12);
}

TEST(Stats, WelchDegenerateAndBadInput) {
    EXPECT_EQ(sixnd::welch_t_test({2, 2}, {2, 2, 2}).p, 1.0);
    EXPECT_EQ(sixnd::welch_t_test({2, 2}, {3, 3}).p, 0.0);
    EXPECT_THROW(sixnd::welch_t_test({1}, {2, 3}), sixnd::Error);
}

// The test is scale-free: {1, 2} against {3, 4} has t = -2 sqrt(2) on df = 2 (two-sided p =
// 1 - sqrt(0.8) in closed form) at any scale, where the variances' squares leave the doubles.
TEST(Stats, WelchAtHugeAndTinyScales) {
    for (double scale : {1.0, 1e-160, 1e-300, 1e150, 1e200}) {
        const sixnd::WelchResult r = sixnd::welch_t_test({1 * scale, 2 * scale}, {3 * scale, 4 * scale});
        EXPECT_NEAR(r.t, -2 * std::sqrt(2.0), 1e-12) << scale;
        EXPECT_NEAR(r.df, 2, 1e-12) << scale;
        EXPECT_NEAR(r.p, 1 - std::sqrt(0.8), 1e-12) << scale;
        EXPECT_NEAR(sixnd::sample_std({scale, 3 * scale}) / scale, std::sqrt(2.0), 1e-12) << scale;
    }
    // Near the largest double the sums overflow but the means do not.
    const double top = 1.7e308;
    EXPECT_EQ(sixnd::mean({top, top}), top);
    EXPECT_EQ(sixnd::mean({top, -INFINITY}), -INFINITY);
    const sixnd::WelchResult r = sixnd::welch_t_test({top / 4, top / 2}, {0.75 * top, top});
    EXPECT_NEAR(r.t, -2 * std::sqrt(2.0), 1e-12);
    EXPECT_NEAR(r.p, 1 - std::sqrt(0.8), 1e-12);
    EXPECT_THROW(sixnd::welch_t_test({NAN, 1}, {2, 3}), sixnd::Error);
    EXPECT_THROW(sixnd::welch_t_test({1, 2}, {INFINITY, 3}), sixnd::Error);
}

}  // namespace
