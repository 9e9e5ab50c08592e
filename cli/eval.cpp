// sixnd eval: a model's loss on llm.c shards (and, with --tokenizer, bits per byte), or, with
// --task hellaswag, its multiple-choice accuracy on a HellaSwag-format JSONL file. The model is
// a checkpoint of sixnd train (any architecture; its dtype, and its tokenizer unless
// --tokenizer), or what --init and the model flags make.
// Loss: batch k is tokens [k*B*T, k*B*T + B*T + 1) of the concatenated shards: the first B*T
// are inputs, the last B*T the targets.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/verbs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/progress_line.h"
#include "data/token_set.h"
#include "model/backend.h"
#include "model/gpt.h"
#include "train/bits_per_byte.h"
#include "train/checkpoint.h"
#include "train/hellaswag.h"
#include "train/tokenizer_match.h"

namespace sixnd::cli {

namespace {

struct EvalFlags {
    std::string data, tokenizer, task = "loss", per_item;
    int B = 4, T = 64;
    long long batches = 0;  // 0: all that fit
    // With --checkpoint: it, and the hash of the tokenizer it was trained with ("" if none).
    std::string checkpoint, trained_with;
};

// --tokenizer (or the checkpoint's copy), held to the model: ids it has rows for, and the
// tokenizer a checkpoint was trained with.
Tokenizer load_tokenizer(const EvalFlags& f, int model_vocab) {
    Tokenizer tok = Tokenizer::load(f.tokenizer);
    require_model_vocab(tok, f.tokenizer, model_vocab);
    require_checkpoint_tokenizer(tok, f.tokenizer, f.trained_with, f.checkpoint);
    return tok;
}

// "%.4f" of x.
std::string fixed4(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", x);
    return text;
}

nlohmann::json eval_loss(GPT& model, const EvalFlags& f, const std::string& source) {
    const int B = f.B, T = f.T;
    TokenSet ts(f.data);
    ts.check_vocab(model.config().vocab_size);
    std::unique_ptr<TokenBytes> token_bytes;
    if (!f.tokenizer.empty()) {
        const Tokenizer tok = load_tokenizer(f, model.config().vocab_size);
        require_data_tokenizer({{&ts, f.data}}, tok, f.tokenizer);
        token_bytes = std::make_unique<TokenBytes>(tok);
    }
    const size_t bt = static_cast<size_t>(B) * T;
    if (ts.size() < bt + 1)
        throw Error(f.data, "holds " + std::to_string(ts.size()) + " tokens; one batch of " + std::to_string(B) + " x " +
                                std::to_string(T) + " needs " + std::to_string(bt + 1));
    const long long fit = static_cast<long long>((ts.size() - 1) / bt);
    const long long batches = f.batches > 0 ? f.batches : fit;
    if (batches > fit)
        throw Error("--batches", std::to_string(batches) + " batches of " + std::to_string(B) + " x " +
                                     std::to_string(T) + " need more than the " + std::to_string(ts.size()) +
                                     " tokens in " + f.data + " (at most " + std::to_string(fit) + " fit)");

    std::vector<int32_t> buf(bt + 1);
    double sum = 0;
    uint64_t bytes = 0;  // a count: JSON shows it as one
    auto t0 = std::chrono::steady_clock::now();
    ProgressLine progress(batches);
    for (long long k = 0; k < batches; k++) {
        ts.read(static_cast<size_t>(k) * bt, bt + 1, buf.data());
        sum += model.forward(buf.data(), buf.data() + 1, B, T);
        if (token_bytes) bytes += token_bytes->count(buf.data() + 1, bt);
        progress.show(k + 1, "eval " + std::to_string(k + 1) + "/" + std::to_string(batches) + "  loss " + fixed4(sum / (k + 1)));
    }
    if (!std::isfinite(sum)) throw Error(source, "the loss is not finite (NaN or Inf): the model's weights or activations overflow");
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double tokens = static_cast<double>(bt) * batches;
    nlohmann::json out = {{"loss", sum / batches},
                          {"tokens", static_cast<long long>(bt) * batches},
                          {"batches", batches},
                          {"tokens_per_s", secs > 0 ? tokens / secs : 0.0}};
    if (token_bytes) {
        out["bytes"] = bytes;
        out["bpb"] = bits_per_byte(sum / batches, tokens, static_cast<double>(bytes));
    } else {
        std::fprintf(stderr, "sixnd eval: no --tokenizer: loss per token only, not bits per byte\n");
    }
    return out;
}

nlohmann::json eval_hellaswag(GPT& model, const EvalFlags& f, const std::string& source) {
    if (f.tokenizer.empty()) throw Error("--task hellaswag", "needs --tokenizer to encode the contexts and endings");
    const Tokenizer tok = load_tokenizer(f, model.config().vocab_size);
    const std::vector<HellaSwagItem> items = read_hellaswag(f.data);
    check_endings_fit(items, tok, model.config().max_seq_len);
    // Renamed into place only when every item is scored: an interrupted or failed eval leaves an
    // earlier --per-item file as it was.
    std::unique_ptr<AtomicFile> per_item;
    if (!f.per_item.empty()) per_item = std::make_unique<AtomicFile>(f.per_item);
    ProgressLine progress(static_cast<long long>(items.size()));
    long long correct = 0;
    const HellaSwagScore score = score_hellaswag(model, tok, items, [&](size_t i, const HellaSwagResult& r) {
        // A NaN loss loses every comparison: an item whose first ending's loss is NaN would count
        // as predicting that ending, and the accuracies would be numbers made of nothing.
        for (size_t b = 0; b < r.sum_loss.size(); b++)
            if (!std::isfinite(r.sum_loss[b]))
                throw Error(source, "the loss of ending " + std::to_string(b) + " of " + f.data + ":" +
                                        std::to_string(items[i].line) +
                                        " is not finite (NaN or Inf): the model's weights or activations overflow");
        if (per_item)
            per_item->write(nlohmann::json{{"line", items[i].line}, {"label", r.label}, {"pred", r.pred}, {"pred_norm", r.pred_norm},
                                           {"sum_loss", r.sum_loss}, {"mean_loss", r.mean_loss}, {"tokens", r.tokens}}
                                .dump() +
                            "\n");
        correct += r.pred == r.label;
        progress.show(static_cast<long long>(i) + 1, "hellaswag " + std::to_string(i + 1) + "/" + std::to_string(items.size()) +
                                                         "  acc " + fixed4(static_cast<double>(correct) / static_cast<double>(i + 1)));
    });
    if (per_item) per_item->commit();
    return {{"task", "hellaswag"}, {"items", score.items}, {"acc", score.acc()}, {"acc_norm", score.acc_norm()}};
}

// --per-item is checked before the model is built: it may be no input's file (an eval that
// overwrites its own data or model cannot be undone) and must be a file sixnd may replace.
void check_per_item(const EvalFlags& f, const ModelFlags& mf, const CheckpointReader* ck) {
    if (f.per_item.empty()) return;
    if (f.task != "hellaswag") throw Error("--per-item", "holds a task's items: it needs --task hellaswag");
    // Not a file named "-" in the working directory, which is what it would otherwise become.
    if (f.per_item == "-")
        throw Error("--per-item", "'-' (standard output) is not supported, stdout holds the result: give a file name");
    check_replaceable_file(f.per_item);
    check_output_dir(f.per_item);
    check_not_same_file(f.per_item, f.data, "--data");
    check_not_same_file(f.per_item, f.tokenizer, "--tokenizer");
    // A file in the checkpoint directory, new or not, would make it other than what was saved.
    std::error_code ec;
    const std::filesystem::path parent = std::filesystem::absolute(f.per_item, ec).parent_path();
    if (ck && std::filesystem::equivalent(parent, ck->dir(), ec))
        throw Error(f.per_item, "is inside the checkpoint " + ck->dir() + " (--checkpoint); write it elsewhere");
    if (mf.init.rfind("llmc:", 0) == 0) check_not_same_file(f.per_item, mf.init.substr(5), "--init");
    if (mf.init.rfind("hf:", 0) == 0)
        for (const char* name : {"/config.json", "/model.safetensors"})
            check_not_same_file(f.per_item, mf.init.substr(3) + name, "--init");
}

}  // namespace

int run_eval(int argc, char** argv) {
    CLI::App app{"Loss (and bits per byte) of a model on llm.c token shards, or HellaSwag accuracy", "sixnd eval"};
    ModelFlags mf;
    add_model_flags(app, mf);
    EvalFlags f;
    std::string checkpoint;
    app.add_option("--checkpoint", checkpoint,
                   "instead of --init: a checkpoint directory (a run's checkpoints/step-N), any architecture; "
                   "evaluated in its own dtype, with its tokenizer unless --tokenizer");
    app.add_option("--data", f.data,
                   "glob of llm.c token shards, or DIR/manifest.json[:val] of sixnd data prepare; with --task hellaswag "
                   "a HellaSwag JSONL file")
        ->required();
    app.add_option("--task", f.task, "loss, or hellaswag (ctx/endings/label per line; acc and acc_norm)")->capture_default_str();
    app.add_option("--tokenizer", f.tokenizer, "sixnd tokenizer file: bits per byte of the decoded text; needed by --task hellaswag");
    app.add_option("--per-item", f.per_item, "with --task hellaswag: write each item's ending losses to this JSONL file");
    app.add_option("--batch", f.B, "batch size B")->capture_default_str();
    app.add_option("--seq-len", f.T, "sequence length T (by default 64, or the model's context where shorter)");
    app.add_option("--batches", f.batches, "number of batches (default: all that fit)");
    if (!parse_flags(app, argc, argv)) return 0;
    refuse_empty_values(app);
    check_model_flags(app, mf);
    if (f.B <= 0) throw Error("--batch", "must be positive, got " + std::to_string(f.B));
    if (f.T <= 0) throw Error("--seq-len", "must be positive, got " + std::to_string(f.T));
    if (app.count("--batches") && f.batches < 1)
        throw Error("--batches", "must be at least 1, got " + std::to_string(f.batches) + " (leave it out for all that fit)");
    if (f.task != "loss" && f.task != "hellaswag") throw Error("--task", "expected loss or hellaswag, got '" + f.task + "'");
    std::unique_ptr<CheckpointReader> ck;
    if (!checkpoint.empty()) {
        if (mf.given)
            throw Error("--checkpoint", "the checkpoint fixes the model: drop --init, --model, --vocab-size, "
                                        "--max-seq-len and the architecture flags");
        ck = std::make_unique<CheckpointReader>(checkpoint);
        if (app.count("--dtype") && mf.dtype != ck->meta().dtype)
            throw Error("--dtype", checkpoint + " holds " + ck->meta().dtype + " weights and is evaluated in " +
                                       ck->meta().dtype + "; drop --dtype " + mf.dtype);
        mf.dtype = ck->meta().dtype;
        if (f.tokenizer.empty() && ck->has_file("tokenizer.bin")) f.tokenizer = ck->path_of("tokenizer.bin");
        f.checkpoint = checkpoint;
        f.trained_with = ck->meta().tokenizer_hash;
    }
    // --seed draws --init random's weights; any other model would be evaluated the same whatever it says.
    if (app.count("--seed") && (ck || mf.init != "random"))
        throw Error("--seed", "applies to --init random only; " + (ck ? "--checkpoint " + checkpoint : mf.init) +
                                  " fixes the weights");
    check_per_item(f, mf, ck.get());
    // HellaSwag scores each item as one batch of its endings, as long as the longest: these
    // flags would be silently ignored.
    if (f.task == "hellaswag")
        for (const char* flag : {"--batch", "--seq-len", "--batches"})
            if (app.count(flag))
                throw Error(flag, "applies to --task loss only (--task hellaswag scores each item's endings as one batch)");

    Backend be = make_backend(mf.device, parse_dtype(mf.dtype));
    InitialModel im;
    if (ck) {
        im.config = ck->meta().model;
        im.source = "checkpoint:" + ck->dir();
    } else {
        im = initial_model(mf);
    }
    // A default that the model's context cannot hold would fail over a flag never given.
    if (!app.count("--seq-len")) f.T = std::min(f.T, im.config.max_seq_len);
    ModelOptions mo;
    mo.attention = parse_attention(mf.attention);
    GPT model(im.config, *be.ops, mo);
    if (ck) set_checkpoint_params(model, *be.memory, *ck);
    else model.set_params(im.params);

    nlohmann::json out = f.task == "hellaswag" ? eval_hellaswag(model, f, im.source) : eval_loss(model, f, im.source);
    out["model"] = im.source;
    out["device"] = be.device;
    out["dtype"] = mf.dtype;
    out["attention"] = mf.attention;
    std::printf("%s\n", out.dump().c_str());
    return 0;
}

}  // namespace sixnd::cli
