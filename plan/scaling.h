// The arithmetic of a training budget, each function one published formula:
//   training compute     C = 6 N D  (+ the attention term 12 L C_model T per token that sixnd's
//                        FLOP counter adds, when the shape is known)
//   Chinchilla optimum   C = 6 N (20 N)  =>  N = sqrt(C / 120), D = 20 N   (Hoffmann et al. 2022)
//   wall-clock           t = C / (devices x peak x MFU)
//   pipeline bubble      (P - 1) / (M + P - 1)   for P stages and M micro-batches (GPipe / 1F1B)
//   interruptions        Llama 3 405B saw 419 unexpected interruptions in 54 days on ~16,000
//                        H100s; scaled linearly in GPU-days (an extrapolation from one data point)
//   checkpoint interval  Young/Daly: sqrt(2 x write time x MTBF)
//   decode               every step reads all weights once and spends 2N FLOPs per sequence:
//                        tokens/s per device = min(batch x bandwidth / weight bytes, peak / 2N)
//                        (bandwidth-bound below the ridge point's batch, compute-bound above)
//   iso-loss trade       the parametric fit L(N, D) = E + A/N^alpha + B/D^beta, as re-fitted to
//                        Chinchilla's data by Besiroglu et al. 2024 (E 1.8172, A 482.01, B 2085.43,
//                        alpha 0.3478, beta 0.3658; its compute optimum sits at ~20 tokens per
//                        parameter, like the rule above, where the original approach-3 fit's
//                        does not), to find how many tokens a smaller model needs for the same loss.
#pragma once

namespace sixnd::plan {

constexpr double kChinchillaTokensPerParam = 20.0;

inline double training_flops(double params, double tokens) { return 6.0 * params * tokens; }
// Attention score and value FLOPs per token (forward and backward): 12 L C T.
inline double attention_flops_per_token(int n_layer, int n_embd, int seq_len) {
    return 12.0 * n_layer * static_cast<double>(n_embd) * seq_len;
}
double chinchilla_params(double flops);  // sqrt(C / 120)

double training_seconds(double flops, double devices, double peak_flops, double mfu);

double pipeline_bubble(int stages, int micro_batches);

struct Interruptions {
    double expected = 0;   // over the run
    double mtbf_s = 0;     // mean time between interruptions of the whole job
};
constexpr double kLlama3Interruptions = 419, kLlama3Days = 54, kLlama3Gpus = 16000;
Interruptions expected_interruptions(double devices, double days);

double young_daly_interval(double write_s, double mtbf_s);

double decode_tokens_per_s(double mem_bw, double peak_flops, double params, int bytes_per_param, int batch);

struct ChinchillaFit {
    double E = 1.8172, A = 482.01, B = 2085.43, alpha = 0.3478, beta = 0.3658;
};
double chinchilla_loss(double params, double tokens, const ChinchillaFit& f = {});
// Tokens that bring a model of `params` to `loss`; 0 when no number of tokens can (the model
// is too small for that loss).
double tokens_for_loss(double params, double loss, const ChinchillaFit& f = {});

}  // namespace sixnd::plan
