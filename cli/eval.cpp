// sixnd eval: mean loss of a model on llm.c shards. Batch k is tokens [k*B*T, k*B*T + B*T + 1)
// of the concatenated shards: the first B*T are inputs, the last B*T the targets.
#include <cmath>
#include <cstdio>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "data/token_set.h"
#include "model/backend.h"
#include "model/gpt.h"

namespace sixnd::cli {

int run_eval(int argc, char** argv) {
    CLI::App app{"Loss of a model on a set of llm.c token shards", "sixnd eval"};
    ModelFlags mf;
    add_model_flags(app, mf);
    std::string data;
    int B = 4, T = 64;
    long long batches = 0;
    app.add_option("--data", data, "glob of llm.c token shards")->required();
    app.add_option("--batch", B, "batch size B")->capture_default_str();
    app.add_option("--seq-len", T, "sequence length T")->capture_default_str();
    app.add_option("--batches", batches, "number of batches (default: all that fit)");
    if (!parse_flags(app, argc, argv)) return 0;
    check_model_flags(app, mf);
    if (B <= 0 || T <= 0) throw Error("--batch/--seq-len", "must be positive");

    Backend be = make_backend(mf.device, parse_dtype(mf.dtype));
    InitialModel im = initial_model(mf);
    ModelOptions mo;
    mo.attention = parse_attention(mf.attention);
    GPT model(im.config, *be.ops, mo);
    model.set_params(im.params);

    TokenSet ts(data);
    ts.check_vocab(im.config.vocab_size);
    const size_t bt = static_cast<size_t>(B) * T;
    if (ts.size() < bt + 1)
        throw Error(data, "holds " + std::to_string(ts.size()) + " tokens; one batch of " + std::to_string(B) + " x " +
                              std::to_string(T) + " needs " + std::to_string(bt + 1));
    const long long fit = static_cast<long long>((ts.size() - 1) / bt);
    if (batches < 0) throw Error("--batches", "must be positive");
    if (batches == 0) batches = fit;
    if (batches > fit)
        throw Error("--batches", std::to_string(batches) + " batches of " + std::to_string(B) + " x " +
                                     std::to_string(T) + " need more than the " + std::to_string(ts.size()) +
                                     " tokens in " + data + " (at most " + std::to_string(fit) + " fit)");

    const bool tty = isatty(fileno(stderr));
    std::vector<int32_t> buf(bt + 1);
    double sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (long long k = 0; k < batches; k++) {
        ts.read(static_cast<size_t>(k) * bt, bt + 1, buf.data());
        sum += model.forward(buf.data(), buf.data() + 1, B, T);
        if (tty) std::fprintf(stderr, "\reval %lld/%lld  loss %.4f", k + 1, batches, sum / (k + 1));
    }
    if (tty) std::fprintf(stderr, "\n");
    if (!std::isfinite(sum)) throw Error(im.source, "the loss is not finite (NaN or Inf): the model's weights or activations overflow");
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::json out = {{"loss", sum / batches},
                          {"tokens", static_cast<long long>(bt) * batches},
                          {"batches", batches},
                          {"model", im.source},
                          {"device", be.device},
                          {"dtype", mf.dtype},
                          {"attention", mf.attention},
                          {"tokens_per_s", secs > 0 ? static_cast<double>(bt) * batches / secs : 0.0}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
}

}  // namespace sixnd::cli
