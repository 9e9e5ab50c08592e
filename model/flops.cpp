#include "model/flops.h"

#include "core/error.h"

namespace sixnd {

Recompute parse_recompute(const std::string& s) {
    if (s == "none") return Recompute::none;
    if (s == "selective") return Recompute::selective;
    if (s == "full") return Recompute::full;
    throw Error("--recompute", "unknown policy '" + s + "' (expected none, selective or full)");
}

const char* recompute_name(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
    }
    return "?";
}

static double block_params(const GPTConfig& c) {
    const double C = c.n_embd;
    return 12.0 * C * C + 13.0 * C;  // qkv 3C^2+3C, proj C^2+C, fc 4C^2+4C, fcproj 4C^2+C, two layernorms 4C
}

size_t matmul_param_count(const GPTConfig& c) {
    const double C = c.n_embd;
    return static_cast<size_t>(static_cast<double>(c.vocab_size) * C + c.n_layer * block_params(c) + 2.0 * C);
}

FlopsPerToken flops_per_token(const GPTConfig& c, int T, Recompute r) {
    const double L = c.n_layer, C = c.n_embd;
    FlopsPerToken f;
    f.model = 6.0 * static_cast<double>(matmul_param_count(c)) + 12.0 * L * C * T;
    f.hardware = f.model;
    if (r == Recompute::full) f.hardware += 2.0 * L * block_params(c) + 4.0 * L * C * T;
    return f;
}

}  // namespace sixnd
