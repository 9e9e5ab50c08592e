// ZeRO-3's gathered parameters: every unit but the embeddings (which keeps a slot of its own for
// the step, since wte is used at both ends of the model) is all-gathered into one of this many
// reused slots, the unit computing and the one prefetched beside it. One number for the engine
// (dist/zero.cpp), which allocates the slots, and the planner (plan/), which predicts what a
// rank holds: the slots' parameters and, on a CPU that keeps packed weight copies per address,
// the copies of the blocks the slots have held.
#pragma once

namespace sixnd {

constexpr int kZero3UnitSlots = 2;

}  // namespace sixnd
