#include "train/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace sixnd {

int sample_token(const std::vector<float>& logits, float temperature, int top_k, float top_p, Rng& rng) {
    const int V = static_cast<int>(logits.size());
    if (temperature <= 0) return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    std::vector<int> idx(V);
    std::iota(idx.begin(), idx.end(), 0);
    int k = (top_k > 0 && top_k < V) ? top_k : V;
    // Ties broken by id, so the candidate set does not depend on the sort's stability.
    auto by_logit = [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    const bool nucleus = top_p < 1;
    if (k < V || nucleus) std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), by_logit);
    double mx = -INFINITY;
    for (int i = 0; i < k; i++) mx = std::max(mx, static_cast<double>(logits[idx[i]]));
    std::vector<double> p(k);
    double sum = 0;
    for (int i = 0; i < k; i++) sum += p[i] = std::exp((logits[idx[i]] - mx) / temperature);
    if (nucleus) {
        double kept = 0;
        int n = 0;
        while (n < k && kept < top_p * sum) kept += p[n++];
        k = n;
        sum = kept;
    }
    double r = rng.uniform() * sum;
    for (int i = 0; i < k; i++) {
        r -= p[i];
        if (r < 0) return idx[i];
    }
    return idx[k - 1];
}

std::vector<uint32_t> generate(Decoder& dec, const std::vector<uint32_t>& prompt, const SampleOptions& o) {
    if (prompt.empty()) throw Error("--prompt", "the prompt must hold at least one token");
    if (static_cast<int>(prompt.size()) > dec.max_len())
        throw Error("--prompt", "the prompt's " + std::to_string(prompt.size()) + " tokens fill the model's context of " +
                                    std::to_string(dec.max_len()));
    Rng rng(o.seed);
    std::vector<float> logits;
    for (uint32_t t : prompt) logits = dec.step(static_cast<int>(t));
    std::vector<uint32_t> out;
    while (static_cast<int>(out.size()) < o.max_tokens) {
        if (o.vocab_limit > 0 && logits.size() > static_cast<size_t>(o.vocab_limit)) logits.resize(o.vocab_limit);
        // Activations that overflowed leave NaN or Inf logits, from which greedy and sampling alike
        // would draw the same arbitrary id every step: eval refuses such a model, and so does this.
        for (float z : logits)
            if (!std::isfinite(z))
                throw Error("", "the model's next-token logits after " + std::to_string(dec.position()) +
                                    " tokens are not finite (NaN or Inf): its weights or activations overflow");
        int next = sample_token(logits, o.temperature, o.top_k, o.top_p, rng);
        out.push_back(static_cast<uint32_t>(next));
        if (next == o.stop_token || dec.position() >= dec.max_len()) break;
        logits = dec.step(next);
    }
    return out;
}

}  // namespace sixnd
