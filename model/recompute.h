// Activation recompute policy (gradient checkpointing).
//  none:      every layer keeps all the activations its backward reads.
//  selective: layernorm outputs and GELU outputs are not kept; backward recomputes them from
//             the kept inputs and statistics (cheap ops, large tensors).
//  full:      each layer keeps only its input; backward re-runs the layer's forward first.
#pragma once
#include <string>

namespace sixnd {

enum class Recompute { none, selective, full };
Recompute parse_recompute(const std::string& s);
const char* recompute_name(Recompute r);

}  // namespace sixnd
