// A small, portable random generator (xoshiro256**, seeded through splitmix64). Used instead
// of <random> distributions because their output differs between standard libraries, and
// sixnd's initialisation, shuffling and sampling must reproduce bit for bit everywhere.
#pragma once
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace sixnd {

// splitmix64's output function: a bijective 64-bit mixer (every input bit affects every output
// bit), also used on its own to hash a value with a seed.
inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Steps a splitmix64 state and returns the next value: a seed expander, and the stream MinHash
// draws its permutations from.
inline uint64_t splitmix64(uint64_t& state) { return mix64(state += 0x9e3779b97f4a7c15ull); }

class Rng {
public:
    explicit Rng(uint64_t seed = 0) { reseed(seed); }
    void reseed(uint64_t seed) {
        uint64_t sm = seed;
        for (auto& w : s_) w = splitmix64(sm);
    }
    uint64_t next_u64() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
    // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; the tiny bias is irrelevant here).
    uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64); }
    // Standard normal by Box-Muller, in double so the result does not depend on libm's float paths.
    double normal() {
        double u1 = uniform();
        double u2 = uniform();
        if (u1 < 1e-300) u1 = 1e-300;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

// Fisher-Yates with this generator: std::shuffle's output differs between standard libraries,
// and shard order and the loader's epoch order must not.
template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[rng.below(i)]);
}

}  // namespace sixnd
