#include <gtest/gtest.h>

#include "core/error.h"
#include "train/schedule.h"

using namespace sixnd;

TEST(Schedule, WarmupIsLinear) {
    Schedule s;
    s.kind = ScheduleKind::constant;
    s.lr = 1.0f;
    s.warmup = 4;
    s.total_steps = 10;
    EXPECT_FLOAT_EQ(s.lr_at(0), 0.25f);
    EXPECT_FLOAT_EQ(s.lr_at(3), 1.0f);
    EXPECT_FLOAT_EQ(s.lr_at(9), 1.0f);
}

TEST(Schedule, CosineReachesTheFinalFractionOnePastTheLastStep) {
    Schedule s;
    s.kind = ScheduleKind::cosine;
    s.lr = 1.0f;
    s.warmup = 0;
    s.total_steps = 10;
    s.final_frac = 0.1f;
    EXPECT_FLOAT_EQ(s.lr_at(0), 1.0f);
    EXPECT_NEAR(s.lr_at(5), 0.55f, 1e-6);
    EXPECT_NEAR(s.lr_at(10), 0.1f, 1e-6);
    s.final_frac = 0.0f;
    EXPECT_GT(s.lr_at(9), 0.02f) << "the last step must still update";
    s.warmup = 2;
    EXPECT_FLOAT_EQ(s.lr_at(2), 1.0f);
    EXPECT_NEAR(s.lr_at(6), 0.5f, 1e-6);
}

TEST(Schedule, WsdHoldsThenDecays) {
    Schedule s;
    s.kind = ScheduleKind::wsd;
    s.lr = 1.0f;
    s.warmup = 0;
    s.total_steps = 10;
    s.final_frac = 0.0f;
    s.decay_frac = 0.2f;
    for (int i = 0; i < 9; i++) EXPECT_FLOAT_EQ(s.lr_at(i), 1.0f) << i;
    EXPECT_FLOAT_EQ(s.lr_at(9), 0.5f);
    EXPECT_FLOAT_EQ(s.lr_at(10), 0.0f);
    EXPECT_THROW(parse_schedule("linear"), Error);
}
