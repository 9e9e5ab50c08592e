#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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

// Every kind over a grid of run lengths, warm-ups (none, most of the run, longer than the run)
// and floors, against the rates README.md and schedule.h state: warm-up (step+1)/warmup of lr;
// then constant lr, or a cosine from lr at the first step after warm-up, or wsd's hold and
// linear decay over the last 20% (rounded, at least one step) of the steps after warm-up, both
// decays reaching final_frac * lr one step past the last.
TEST(Schedule, MatchesTheStatedRatesAtEveryStep) {
    auto stated = [](ScheduleKind kind, int warmup, int total, double floor, int step) {
        if (step < warmup) return (step + 1.0) / warmup;
        if (kind == ScheduleKind::constant) return 1.0;
        if (kind == ScheduleKind::cosine) return floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * (step - warmup) / (total - warmup)));
        const int decay = std::max(1, static_cast<int>(std::lround(0.2 * (total - warmup))));
        const int start = total - decay;
        return step < start ? 1.0 : 1 + (floor - 1) * (step - start) / decay;
    };
    for (ScheduleKind kind : {ScheduleKind::constant, ScheduleKind::cosine, ScheduleKind::wsd})
        for (int total : {1, 2, 7, 13, 100})
            for (int warmup : {0, 1, total - 1, total, total + 5})
                for (float floor : {0.0f, 0.1f, 1.0f}) {
                    Schedule s;
                    s.kind = kind;
                    s.lr = 1.0f;
                    s.warmup = warmup;
                    s.total_steps = total;
                    s.final_frac = floor;
                    for (int step = 0; step < total; step++) {
                        const double want = stated(kind, warmup, total, floor, step);
                        EXPECT_NEAR(s.lr_at(step), want, 1e-6) << schedule_name(kind) << " total " << total << " warmup "
                                                               << warmup << " floor " << floor << " step " << step;
                        if (floor == 0.0f) {
                            EXPECT_GT(s.lr_at(step), 0.0f) << "a step at rate 0 updates nothing";
                        }
                    }
                    if (warmup < total && kind != ScheduleKind::constant) {
                        EXPECT_NEAR(s.lr_at(total), floor, 1e-6) << schedule_name(kind) << " one past the last step";
                    }
                }
}
