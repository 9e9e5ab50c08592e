#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "train/sampler.h"

using namespace sixnd;

TEST(Sampler, GreedyTakesTheArgmax) {
    Rng rng(1);
    EXPECT_EQ(sample_token({0.1f, 3.0f, -2.0f, 2.9f}, 0.0f, 0, rng), 1);
}

TEST(Sampler, TopKNeverLeavesTheKBest) {
    Rng rng(2);
    std::vector<float> logits = {5.0f, 4.9f, 4.8f, -1.0f, 0.0f, 4.7f};
    std::set<int> seen;
    for (int i = 0; i < 2000; i++) seen.insert(sample_token(logits, 1.0f, 3, rng));
    EXPECT_EQ(seen, (std::set<int>{0, 1, 2}));
}

TEST(Sampler, FollowsTheSoftmaxAndTheSeed) {
    std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
    Rng rng(3);
    int ones = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) ones += sample_token(logits, 1.0f, 0, rng);
    EXPECT_NEAR(ones / double(n), 0.75, 0.015);
    Rng a(9), b(9);
    for (int i = 0; i < 100; i++) EXPECT_EQ(sample_token(logits, 0.7f, 0, a), sample_token(logits, 0.7f, 0, b));
}
