#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "train/sampler.h"

using namespace sixnd;

TEST(Sampler, GreedyTakesTheArgmax) {
    Rng rng(1);
    EXPECT_EQ(sample_token({0.1f, 3.0f, -2.0f, 2.9f}, 0.0f, 0, 1.0f, rng), 1);
}

TEST(Sampler, TopKNeverLeavesTheKBest) {
    Rng rng(2);
    std::vector<float> logits = {5.0f, 4.9f, 4.8f, -1.0f, 0.0f, 4.7f};
    std::set<int> seen;
    for (int i = 0; i < 2000; i++) seen.insert(sample_token(logits, 1.0f, 3, 1.0f, rng));
    EXPECT_EQ(seen, (std::set<int>{0, 1, 2}));
}

TEST(Sampler, FollowsTheSoftmaxAndTheSeed) {
    std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
    Rng rng(3);
    int ones = 0;
    const int n = 20000;
    for (int i = 0; i < n; i++) ones += sample_token(logits, 1.0f, 0, 1.0f, rng);
    EXPECT_NEAR(ones / double(n), 0.75, 0.015);
    Rng a(9), b(9);
    for (int i = 0; i < 100; i++) EXPECT_EQ(sample_token(logits, 0.7f, 0, 1.0f, a), sample_token(logits, 0.7f, 0, 1.0f, b));
}

// Probabilities 0.5, 0.25, 0.125, 0.125 (ids 2, 0, 3, 1): the nucleus of 0.7 is {2, 0}, drawn
// as 2/3 and 1/3; exactly 0.75 keeps those two too (the token reaching top_p is the last kept);
// a top_p below the first probability keeps one token.
TEST(Sampler, TopPKeepsTheSmallestSetReachingIt) {
    const std::vector<float> logits = {std::log(2.0f), 0.0f, std::log(4.0f), 0.0f};
    Rng rng(4);
    std::vector<int> counts(4);
    const int n = 30000;
    for (int i = 0; i < n; i++) counts[sample_token(logits, 1.0f, 0, 0.7f, rng)]++;
    EXPECT_EQ(counts[1] + counts[3], 0);
    EXPECT_NEAR(counts[2] / double(n), 2.0 / 3, 0.015);
    std::set<int> seen;
    for (int i = 0; i < 2000; i++) seen.insert(sample_token(logits, 1.0f, 0, 0.75f, rng));
    EXPECT_EQ(seen, (std::set<int>{0, 2}));
    for (int i = 0; i < 100; i++) EXPECT_EQ(sample_token(logits, 1.0f, 0, 0.3f, rng), 2);
    // After top-k 3 (ids 2, 0, 1: ties go to the lower id) the probabilities are 4/7, 2/7, 1/7.
    seen.clear();
    for (int i = 0; i < 2000; i++) seen.insert(sample_token(logits, 1.0f, 3, 0.8f, rng));
    EXPECT_EQ(seen, (std::set<int>{0, 2}));
}
