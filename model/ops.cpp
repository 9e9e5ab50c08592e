#include "model/ops.h"

#include <cmath>

#include "core/error.h"

namespace sixnd {

AttentionKind parse_attention(const std::string& s) {
    if (s == "naive") return AttentionKind::naive;
    if (s == "flash") return AttentionKind::flash;
    throw Error("--attention", "unknown attention '" + s + "' (expected naive or flash)");
}

const char* attention_name(AttentionKind k) { return k == AttentionKind::naive ? "naive" : "flash"; }

AdamWStep adamw_step(const AdamWArgs& a) {
    const double bc1 = 1.0 - std::pow(static_cast<double>(a.beta1), a.step);
    const double bc2 = 1.0 - std::pow(static_cast<double>(a.beta2), a.step);
    AdamWStep s;
    s.beta1 = a.beta1;
    s.beta2 = a.beta2;
    s.eps = a.eps;
    s.grad_scale = a.grad_scale;
    s.step_size = static_cast<float>(a.lr / bc1);
    s.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    s.decay = static_cast<float>(1.0 - static_cast<double>(a.lr) * a.weight_decay);
    return s;
}

}  // namespace sixnd
