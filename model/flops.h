// FLOP accounting (DESIGN.md): per token, model FLOPs = 6*N + 12*L*C*T, where N counts the
// parameters that take part in matrix multiplies — every parameter except the position
// embeddings, with the tied wte counted once (as the LM head, over the real vocabulary); with
// untied embeddings the head counts and wte (a row lookup) does not. Block shapes follow the
// knobs (GQA's narrower c_attn, the MLP's width). Attention's 12*L*C*T is per query head and
// so the same under GQA; norms, rope and the MLP activations are not matmul FLOPs.
// Hardware FLOPs add what the recompute policy runs again: under `full` each block's forward up
// to the MLP activation (2*(N_blocks - N_mlp_proj) + 4*L*C*T per token: the MLP's output
// projection is not rerun); `selective` recomputes only norms and activations, which are not
// matmul FLOPs. MFU = model FLOP/s / peak; HFU = hardware FLOP/s / peak.
#pragma once
#include <cstddef>

#include "model/config.h"
#include "model/recompute.h"

namespace sixnd {

struct FlopsPerToken {
    double model = 0;
    double hardware = 0;
};

size_t matmul_param_count(const GPTConfig& cfg);
FlopsPerToken flops_per_token(const GPTConfig& cfg, int T, Recompute r);

}  // namespace sixnd
