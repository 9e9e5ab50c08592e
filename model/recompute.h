// Activation recompute policy (gradient checkpointing).
//  none:      every layer keeps all the activations its backward reads.
//  selective: layernorm outputs and GELU outputs are not kept; backward recomputes them from
//             the kept inputs and statistics (cheap ops, large tensors).
//  full:      each layer keeps only its input; backward re-runs the layer's forward first.
// Header-only: the planner (which links no model code) reads the same policy names.
#pragma once
#include <string>

#include "core/error.h"

namespace sixnd {

enum class Recompute { none, selective, full };

inline Recompute parse_recompute(const std::string& s) {
    if (s == "none") return Recompute::none;
    if (s == "selective") return Recompute::selective;
    if (s == "full") return Recompute::full;
    throw Error("--recompute", "unknown policy '" + s + "' (expected none, selective or full)");
}

inline const char* recompute_name(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
    }
    return "?";
}

}  // namespace sixnd
