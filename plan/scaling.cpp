#include "plan/scaling.h"

#include <algorithm>
#include <cmath>

namespace sixnd::plan {

double chinchilla_params(double flops) { return std::sqrt(flops / (6.0 * kChinchillaTokensPerParam)); }

double training_seconds(double flops, double devices, double peak_flops, double mfu) {
    return flops / (devices * peak_flops * mfu);
}

double pipeline_bubble(int stages, int micro_batches) {
    return (stages - 1.0) / (static_cast<double>(micro_batches) + stages - 1.0);
}

Interruptions expected_interruptions(double devices, double days) {
    const double per_gpu_day = kLlama3Interruptions / (kLlama3Gpus * kLlama3Days);
    Interruptions r;
    r.expected = per_gpu_day * devices * days;
    r.mtbf_s = 86400.0 / (per_gpu_day * devices);
    return r;
}

double young_daly_interval(double write_s, double mtbf_s) { return std::sqrt(2.0 * write_s * mtbf_s); }

double decode_tokens_per_s(double mem_bw, double peak_flops, double params, int bytes_per_param, int batch) {
    return std::min(batch * mem_bw / (bytes_per_param * params), peak_flops / (2 * params));
}

double chinchilla_loss(double params, double tokens, const ChinchillaFit& f) {
    return f.E + f.A / std::pow(params, f.alpha) + f.B / std::pow(tokens, f.beta);
}

double tokens_for_loss(double params, double loss, const ChinchillaFit& f) {
    const double rest = loss - f.E - f.A / std::pow(params, f.alpha);
    if (rest <= 0) return 0;
    return std::pow(f.B / rest, 1.0 / f.beta);
}

}  // namespace sixnd::plan
