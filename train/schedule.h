// Learning-rate schedules. All start with `warmup` steps of linear warm-up from lr/warmup to lr.
//  constant: lr after warm-up.
//  cosine:   cosine decay from lr, at the first step after warm-up, towards final_frac*lr.
//  wsd:      warmup-stable-decay: lr until the last `decay_frac` of the steps after warm-up
//            (rounded, at least one step), then linear decay towards final_frac*lr.
// A decay reaches final_frac*lr at step total_steps, one past the last: the last step still
// updates at a rate above it, so with the default final_frac of 0 no step is spent at rate 0
// (as in llm.c, and as PyTorch's schedulers stepped once per step give).
#pragma once
#include <string>

namespace sixnd {

enum class ScheduleKind { constant, cosine, wsd };

struct Schedule {
    ScheduleKind kind = ScheduleKind::cosine;
    float lr = 6e-4f;
    int warmup = 0;
    int total_steps = 1;
    float final_frac = 0.0f;
    float decay_frac = 0.2f;  // wsd only

    float lr_at(int step) const;  // step is 0-based
};

ScheduleKind parse_schedule(const std::string& s);
const char* schedule_name(ScheduleKind k);

}  // namespace sixnd
