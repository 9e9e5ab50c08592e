#include "model/flops.h"

#include "model/param_layout.h"

namespace sixnd {

namespace {

// Parameters of the blocks, all layers together (the knobs change their shapes), from the
// layout itself so that the count can never disagree with what the model holds.
double all_block_params(const ParamLayout& layout) {
    double n = 0;
    for (const auto& t : layout.tensors())
        if (t.unit >= 1 && t.unit + 1 < static_cast<int>(layout.units().size())) n += static_cast<double>(t.numel);
    return n;
}

// The block parameters a `full` recompute multiplies again: each block's forward but the MLP's
// output projection, whose output backward does not need (GPT::block_backward reruns
// block_forward(l, keep_output = false)).
double recomputed_block_params(const ParamLayout& layout, int n_layer) {
    double n = all_block_params(layout);
    for (int l = 0; l < n_layer; l++)
        for (BlockTensor k : {kFcProjW, kFcProjB})
            if (const TensorInfo* t = layout.block(l, k)) n -= static_cast<double>(t->numel);
    return n;
}

}  // namespace

size_t matmul_param_count(const GPTConfig& c) {
    const ParamLayout layout(c);
    double lnf = 0;
    for (const auto& t : layout.tensors())
        if (t.unit + 1 == static_cast<int>(layout.units().size())) lnf += static_cast<double>(t.numel);
    // The head over the real vocabulary (wte when tied; an untied wte only looks rows up).
    const double head = static_cast<double>(c.vocab_size) * c.n_embd;
    return static_cast<size_t>(head + all_block_params(layout) + lnf);
}

FlopsPerToken flops_per_token(const GPTConfig& c, int T, Recompute r) {
    const double L = c.n_layer, C = c.n_embd;
    FlopsPerToken f;
    f.model = 6.0 * static_cast<double>(matmul_param_count(c)) + 12.0 * L * C * T;
    f.hardware = f.model;
    if (r == Recompute::full) f.hardware += 2.0 * recomputed_block_params(ParamLayout(c), c.n_layer) + 4.0 * L * C * T;
    return f;
}

}  // namespace sixnd
