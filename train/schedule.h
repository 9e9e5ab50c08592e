// Learning-rate schedules. All start with `warmup` steps of linear warm-up from lr/warmup to lr.
//  constant: lr after warm-up.
//  cosine:   cosine decay from lr to final_frac*lr at the last step.
//  wsd:      warmup-stable-decay: lr until the last `decay_frac` of the steps, then linear
//            decay to final_frac*lr.
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
