// Shared test helpers: seeded random inputs, float64 comparison, and where the shared
// fixtures live.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.h"

namespace sixnd::test {

// Uniform in [lo, hi), from a fixed seed so a failure reproduces.
std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
std::vector<int32_t> random_ints(size_t n, uint64_t seed, int32_t lo, int32_t hi_exclusive);

// ||a - b|| / ||b||, in double.
double rel_error(const std::vector<double>& a, const std::vector<double>& ref);
double rel_error(const std::vector<float>& a, const std::vector<double>& ref);
double rel_error(const std::vector<float>& a, const std::vector<float>& ref);

std::vector<double> to_double(const std::vector<float>& v);
std::vector<bf16> to_bf16(const std::vector<float>& v);
std::vector<float> from_bf16(const std::vector<bf16>& v);

// ../shared/fixtures (or $SIXND_SHARED/fixtures); empty when absent, so tests can skip.
std::string shared_fixtures_dir();
// A fresh empty temporary directory under the system's temporary directory, named prefix + six
// random characters, removed with all it holds when this goes out of scope: a failed assertion
// or an expected error leaves nothing behind.
struct TempDir {
    explicit TempDir(const std::string& prefix);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string dir;
};
// Runs body in a forked child and returns its wait status; the child never returns into the
// test framework (it ends with _exit(0) after body, or as body ends it: a signal).
int in_child(const std::function<void()>& body);

}  // namespace sixnd::test
