// Run-to-run statistics for ablations: mean, sample standard deviation, and Welch's t-test
// (two samples, unequal variances) with its two-sided p-value from the Student-t distribution,
// computed through the regularized incomplete beta function (no statistics library).
#pragma once
#include <vector>

namespace sixnd {

double mean(const std::vector<double>& x);
// Sample standard deviation (divides by n - 1); 0 for fewer than two values.
double sample_std(const std::vector<double>& x);

// I_x(a, b) = B(x; a, b) / B(a, b) for a, b > 0 and 0 <= x <= 1.
double incomplete_beta(double a, double b, double x);

// P(T <= t) for Student's t with `df` > 0 degrees of freedom (df need not be an integer).
double student_t_cdf(double t, double df);

struct WelchResult {
    double t = 0;   // (mean(a) - mean(b)) / sqrt(var(a)/na + var(b)/nb)
    double df = 0;  // Welch-Satterthwaite degrees of freedom
    double p = 1;   // two-sided p-value
};

// Needs at least two finite values on each side. When both samples have zero variance the test is
// degenerate: p = 1 if the means are equal, else 0 (t = +-inf, df = na + nb - 2).
WelchResult welch_t_test(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace sixnd
