// sixnd sample: generate from a checkpoint (or, with --init, an llm.c file or a Hugging Face
// GPT-2 directory) with a KV cache. The prompt is encoded, and the output decoded, with
// --tokenizer or the tokenizer stored in the checkpoint; without one, a byte-level model
// (vocabulary 256) takes the prompt's bytes, and output is printed as token ids.
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/model_flags.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "model/backend.h"
#include "model/decoder.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/sampler.h"

namespace sixnd::cli {

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
    app.add_option("--max-tokens", so.max_tokens, "tokens to generate")->capture_default_str();
    app.add_option("--temperature", so.temperature, "0 = greedy")->capture_default_str();
    app.add_option("--top-k", so.top_k, "sample from the k most likely tokens (0 = all)")->capture_default_str();
    app.add_option("--seed", so.seed)->capture_default_str();
    app.add_option("--samples", samples, "number of samples")->capture_default_str();
    app.add_option("--device", device, "cpu, cuda or auto")->capture_default_str();
    if (!parse_flags(app, argc, argv)) return 0;
    if (so.max_tokens <= 0) throw Error("--max-tokens", "must be positive");
    if (checkpoint.empty() == init.empty()) throw Error("--checkpoint/--init", "give exactly one of them");

    std::unique_ptr<CheckpointReader> ck;
    InitialModel im;
    if (!checkpoint.empty()) {
        ck = std::make_unique<CheckpointReader>(checkpoint);
        im.config = checkpoint_model_config(*ck);
        dtype = ck->meta().at("dtype").get<std::string>();
    } else {
        ModelFlags mf;
        mf.init = init;
        im = initial_model(mf);
    }
    const GPTConfig& cfg = im.config;
    Backend be = make_backend(device, parse_dtype(dtype));
    GPT model(cfg, *be.ops);
    if (ck) {
        const std::string params = ck->read_file("params.bin");
        if (params.size() != model.layout().total() * dtype_size(be.ops->dtype()))
            throw Error(ck->path_of("params.bin"), "size does not match the model in meta.json");
        be.memory->copy_to_device(model.params(), params.data(), params.size());
    } else {
        model.set_params(im.params);
    }

    std::unique_ptr<Tokenizer> tok;
    if (!tokenizer_path.empty()) tok = std::make_unique<Tokenizer>(Tokenizer::load(tokenizer_path));
    else if (ck && ck->has_file("tokenizer.bin")) tok = std::make_unique<Tokenizer>(Tokenizer::load(ck->path_of("tokenizer.bin")));
    std::vector<uint32_t> ids;
    if (!prompt_ids.empty()) {
        std::stringstream ss(prompt_ids);
        std::string item;
        while (std::getline(ss, item, ',')) {
            try {
                ids.push_back(static_cast<uint32_t>(std::stoul(item)));
            } catch (const std::exception&) {
                throw Error("--prompt-ids", "'" + item + "' is not a token id");
            }
        }
    } else if (tok) {
        ids = tok->encode(prompt);
        if (auto eot = tok->special_id("<|endoftext|>")) {
            so.stop_token = static_cast<int>(*eot);
            if (ids.empty()) ids.push_back(*eot);
        }
    } else if (cfg.vocab_size == 256) {
        for (unsigned char ch : prompt) ids.push_back(ch);
    } else {
        throw Error("--prompt", "no tokenizer (none in the checkpoint, no --tokenizer); give the prompt with --prompt-ids");
    }
    if (ids.empty()) throw Error("--prompt", "empty prompt (give --prompt TEXT or --prompt-ids)");

    for (int s = 0; s < samples; s++) {
        Decoder dec(model, cfg.max_seq_len);
        SampleOptions one = so;
        one.seed = so.seed + static_cast<uint64_t>(s);
        std::vector<uint32_t> out = generate(dec, ids, one);
        if (tok || cfg.vocab_size == 256) {
            std::string text;
            if (tok) text = tok->decode(ids) + tok->decode(out);
            else
                for (uint32_t t : ids) text += static_cast<char>(t);
            if (!tok)
                for (uint32_t t : out) text += static_cast<char>(t);
            std::printf("%s%s\n", samples > 1 ? ("--- sample " + std::to_string(s + 1) + " ---\n").c_str() : "", text.c_str());
        } else {
            std::printf("%s\n", nlohmann::json(out).dump().c_str());
        }
    }
    return 0;
}

}  // namespace sixnd::cli
