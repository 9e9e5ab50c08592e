// sixnd sample: generate from a checkpoint (or, with --init, an llm.c file or a Hugging Face
// GPT-2 directory) with a KV cache. The prompt is encoded, and the output decoded, with
// --tokenizer or the tokenizer stored in the checkpoint; without one, a byte-level model
// (vocabulary 256) takes the prompt's bytes, and output is printed as token ids.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/uint64_flag.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "core/rng.h"
#include "model/backend.h"
#include "model/decoder.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/sampler.h"
#include "train/tokenizer_match.h"

namespace sixnd::cli {

namespace {

// "1,2,3": decimal ids below the vocabulary, nothing else (no signs, spaces or empty items).
std::vector<uint32_t> parse_prompt_ids(const std::string& text, int vocab, const std::string& whose) {
    std::vector<uint32_t> ids;
    std::string_view rest(text);
    while (true) {
        const std::string_view item = rest.substr(0, rest.find(','));
        uint64_t v = 0;
        const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
        if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size())
            throw Error("--prompt-ids", "'" + std::string(item) + "' is not a token id (expected comma-separated decimal ids)");
        if (v >= static_cast<uint64_t>(vocab))
            throw Error("--prompt-ids", "token " + std::string(item) + " is outside " + whose + " vocabulary of " +
                                            std::to_string(vocab));
        ids.push_back(static_cast<uint32_t>(v));
        if (item.size() == rest.size()) break;
        rest.remove_prefix(item.size() + 1);
    }
    return ids;
}

void write_bytes(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

}  // namespace

int run_sample(int argc, char** argv) {
    CLI::App app{"Generate text from a checkpoint", "sixnd sample"};
    std::string checkpoint, init, dtype = "fp32", tokenizer_path, prompt, prompt_ids, device = "auto";
    SampleOptions so;
    int samples = 1;
    app.add_option("--checkpoint", checkpoint, "checkpoint directory (a run's checkpoints/step-N)");
    app.add_option("--init", init, "instead of --checkpoint: llmc:PATH or hf:DIR");
    app.add_option("--dtype", dtype, "storage type for --init: fp32 or bf16")->capture_default_str();
    app.add_option("--tokenizer", tokenizer_path, "sixnd tokenizer file (default: the checkpoint's)");
    app.add_option("--prompt", prompt, "prompt text");
    app.add_option("--prompt-ids", prompt_ids, "prompt as comma-separated token ids");
    app.add_option("--max-tokens", so.max_tokens, "tokens to generate (fewer where the tokenizer's <|endoftext|> is drawn: "
                                                  "a sample stops there; the default, fewer where the context ends)")->capture_default_str();
    app.add_option("--temperature", so.temperature, "0 = greedy")->capture_default_str();
    app.add_option("--top-k", so.top_k, "sample from the k most likely tokens (0 = all)")->capture_default_str();
    app.add_option("--top-p", so.top_p, "then from the most likely tokens whose probabilities first reach p (1 = all)")
        ->capture_default_str();
    app.add_option("--seed", so.seed, "random seed (the first sample's; the others' are derived from it)")
        ->capture_default_str()
        ->check(uint64_value());
    app.add_option("--samples", samples, "number of samples")->capture_default_str();
    app.add_option("--device", device, "cpu, cuda or auto")->capture_default_str();
    if (!parse_flags(app, argc, argv)) return 0;
    // An empty --prompt starts the sample at <|endoftext|>; any other flag given empty is a fault
    // (an unset variable in a script: --checkpoint "" beside --init would be read as left out).
    refuse_empty_values(app, {"--prompt"});
    constexpr int kMaxSamples = 100000;
    if (so.max_tokens <= 0) throw Error("--max-tokens", "must be positive, got " + std::to_string(so.max_tokens));
    // A float as it was written: parsed, 3.5e38 is inf and 1e-9 prints as 0.000000.
    const auto given = [&](const char* flag) { return app.get_option(flag)->results().back(); };
    if (!std::isfinite(so.temperature) || so.temperature < 0)
        throw Error("--temperature", "must be a finite number >= 0 (0: greedy), got " + given("--temperature"));
    if (so.top_k < 0) throw Error("--top-k", "must be 0 (all tokens) or more, got " + std::to_string(so.top_k));
    if (!(so.top_p > 0 && so.top_p <= 1)) throw Error("--top-p", "must be in (0, 1] (1: all tokens), got " + given("--top-p"));
    if (samples < 1 || samples > kMaxSamples)
        throw Error("--samples", "must be in [1, " + std::to_string(kMaxSamples) + "], got " + std::to_string(samples));
    if (app.count("--prompt") && app.count("--prompt-ids")) throw Error("--prompt-ids", "give either --prompt or --prompt-ids, not both");
    if (checkpoint.empty() == init.empty()) throw Error("--checkpoint/--init", "give exactly one of them");

    std::unique_ptr<CheckpointReader> ck;
    InitialModel im;
    if (!checkpoint.empty()) {
        ck = std::make_unique<CheckpointReader>(checkpoint);
        im.config = ck->meta().model;
        if (app.count("--dtype") && dtype != ck->meta().dtype)
            throw Error("--dtype", checkpoint + " holds " + ck->meta().dtype + " weights and samples in " +
                                       ck->meta().dtype + "; --dtype is for --init (drop --dtype " + dtype + ")");
        dtype = ck->meta().dtype;
    } else {
        // Untrained weights (--init random, which eval and train take) would sample noise.
        if (init.rfind("llmc:", 0) != 0 && init.rfind("hf:", 0) != 0)
            throw Error("--init", "expected llmc:PATH or hf:DIR (a trained model to sample from), got '" + init + "'");
        ModelFlags mf;
        mf.init = init;
        im = initial_model(mf);
    }
    const GPTConfig& cfg = im.config;
    if (so.top_k > cfg.vocab_size)
        throw Error("--top-k", std::to_string(so.top_k) + " is more than the model's vocabulary of " + std::to_string(cfg.vocab_size));
    // Every id in and out must decode: a tokenizer with more tokens than the model has ids is
    // refused before the model is built, and only the tokenizer's ids are drawn.
    const std::string tok_file = !tokenizer_path.empty()                 ? tokenizer_path
                                 : ck && ck->has_file("tokenizer.bin") ? ck->path_of("tokenizer.bin")
                                                                        : "";
    std::unique_ptr<Tokenizer> tok;
    if (!tok_file.empty()) {
        tok = std::make_unique<Tokenizer>(Tokenizer::load(tok_file));
        require_model_vocab(*tok, tok_file, cfg.vocab_size);
        if (ck) require_checkpoint_tokenizer(*tok, tok_file, ck->meta().tokenizer_hash, checkpoint);
        so.vocab_limit = static_cast<int>(tok->vocab_size());
        // A sample ends where the model ends its text, whichever way the prompt was given.
        if (auto eot = tok->special_id("<|endoftext|>")) so.stop_token = static_cast<int>(*eot);
    }
    Backend be = make_backend(device, parse_dtype(dtype));
    GPT model(cfg, *be.ops);
    if (ck) {
        set_checkpoint_params(model, *be.memory, *ck);
    } else {
        model.set_params(im.params);
    }

    std::vector<uint32_t> ids;
    // An empty prompt starts the sample where a document starts, at <|endoftext|>: the model's
    // context, not text the user gave, so it is not printed.
    bool start_added = false;
    if (app.count("--prompt-ids")) {
        ids = tok ? parse_prompt_ids(prompt_ids, so.vocab_limit, "the tokenizer's")
                  : parse_prompt_ids(prompt_ids, cfg.vocab_size, "the model's");
    } else if (tok) {
        ids = tok->encode(prompt);
        if (ids.empty() && so.stop_token >= 0) {
            ids.push_back(static_cast<uint32_t>(so.stop_token));
            start_added = true;
        }
    } else if (cfg.vocab_size == 256) {
        for (unsigned char ch : prompt) ids.push_back(ch);
    } else {
        throw Error("--prompt", std::string("no tokenizer (") + (ck ? "none in the checkpoint, " : "") +
                                    "no --tokenizer); give the prompt with --prompt-ids");
    }
    if (ids.empty()) throw Error("--prompt", "empty prompt (give --prompt TEXT or --prompt-ids)");
    // The prompt fills positions 0..P-1; each generated token after the first needs one more.
    const long long room = static_cast<long long>(cfg.max_seq_len) - static_cast<long long>(ids.size()) + 1;
    if (room < 1)
        throw Error("--prompt", "the prompt's " + std::to_string(ids.size()) + " tokens fill the model's context of " +
                                    std::to_string(cfg.max_seq_len));
    // The default asks for what fits; a --max-tokens the user gave is held to the context.
    if (!app.count("--max-tokens") && so.max_tokens > room) so.max_tokens = static_cast<int>(room);
    if (so.max_tokens > room)
        throw Error("--max-tokens", std::to_string(so.max_tokens) + " with a " + std::to_string(ids.size()) +
                                        "-token prompt goes beyond the model's context of " + std::to_string(cfg.max_seq_len) +
                                        " tokens (at most " + std::to_string(room) + ")");

    // The cache holds the prompt and every generated token but the last (never fed back): no
    // more than the context, and no bigger than the sample for a long-context model.
    const int cache_len = static_cast<int>(ids.size()) + so.max_tokens - 1;
    // The first sample draws with --seed itself, the others with seeds drawn from it: seed + s
    // would make --seed 8's samples those of --seed 7 shifted by one.
    uint64_t seeds = so.seed;
    for (int s = 0; s < samples; s++) {
        Decoder dec(model, cache_len);
        SampleOptions one = so;
        if (s > 0) one.seed = splitmix64(seeds);
        std::vector<uint32_t> out;
        try {
            out = generate(dec, ids, one);
        } catch (const Error& e) {
            // Non-finite logits are the model's fault; generate knows the logits, not their file.
            if (!e.where().empty()) throw;
            throw Error(checkpoint.empty() ? init : checkpoint, e.fault());
        }
        if (tok || cfg.vocab_size == 256) {
            std::string text;
            if (tok) text = (start_added ? "" : tok->decode(ids)) + tok->decode(out);
            else
                for (uint32_t t : ids) text += static_cast<char>(t);
            if (!tok)
                for (uint32_t t : out) text += static_cast<char>(t);
            // The text's bytes as they are: a decoded zero byte must not end the output.
            if (samples > 1) write_bytes("--- sample " + std::to_string(s + 1) + " ---\n");
            write_bytes(text + "\n");
        } else {
            std::printf("%s\n", nlohmann::json(out).dump().c_str());
        }
    }
    return 0;
}

}  // namespace sixnd::cli
