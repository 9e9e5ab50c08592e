#include "tests/util/test_util.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace sixnd::test {

std::vector<float> random_floats(size_t n, uint64_t seed, float lo, float hi) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

std::vector<int32_t> random_ints(size_t n, uint64_t seed, int32_t lo, int32_t hi_exclusive) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> d(lo, hi_exclusive - 1);
    std::vector<int32_t> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

double rel_error(const std::vector<double>& a, const std::vector<double>& ref) {
    if (a.size() != ref.size()) throw std::runtime_error("rel_error: size mismatch");
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); i++) {
        double d = a[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    if (den == 0) return std::sqrt(num);
    return std::sqrt(num / den);
}
double rel_error(const std::vector<float>& a, const std::vector<double>& ref) { return rel_error(to_double(a), ref); }
double rel_error(const std::vector<float>& a, const std::vector<float>& ref) {
    return rel_error(to_double(a), to_double(ref));
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
std::vector<bf16> to_bf16(const std::vector<float>& v) {
    std::vector<bf16> out(v.size());
    for (size_t i = 0; i < v.size(); i++) out[i] = bf16(v[i]);
    return out;
}
std::vector<float> from_bf16(const std::vector<bf16>& v) {
    std::vector<float> out(v.size());
    for (size_t i = 0; i < v.size(); i++) out[i] = static_cast<float>(v[i]);
    return out;
}

std::string shared_fixtures_dir() {
    namespace fs = std::filesystem;
    std::vector<std::string> candidates;
    if (const char* s = std::getenv("SIXND_SHARED")) candidates.push_back(std::string(s) + "/fixtures");
    if (const char* s = std::getenv("SIXND_SOURCE")) candidates.push_back(std::string(s) + "/../shared/fixtures");
    candidates.push_back("../shared/fixtures");
    for (const auto& c : candidates)
        if (fs::is_directory(c)) return fs::canonical(c).string();
    return "";
}

int in_child(const std::function<void()>& body) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        body();
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
}

namespace {

std::string make_temp_dir(const std::string& prefix) {
    std::string templ = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed for " + templ);
    return templ;
}

}  // namespace

TempDir::TempDir(const std::string& prefix) : dir(make_temp_dir(prefix)) {}

// The error_code form: a destructor must not throw.
TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

}  // namespace sixnd::test
