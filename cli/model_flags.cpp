#include "cli/model_flags.h"

#include "core/error.h"
#include "model/hf_gpt2.h"
#include "core/finite.h"
#include "model/init.h"
#include "model/param_layout.h"

namespace sixnd::cli {

void add_model_flags(CLI::App& app, ModelFlags& f) {
    app.add_option("--init", f.init, "random, llmc:PATH (an llm.c model file, version 3 or 5) or hf:DIR (a Hugging Face GPT-2 directory)")
        ->capture_default_str();
    app.add_option("--model", f.model, "preset for --init random: tiny, d6, d12, gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m")
        ->capture_default_str();
    app.add_option("--vocab-size", f.vocab_size, "vocabulary size for --init random (default: the preset's)");
    app.add_option("--max-seq-len", f.max_seq_len, "context length for --init random (default: the preset's)");
    app.add_option("--seed", f.seed, "random seed")->capture_default_str();
    app.add_option("--device", f.device, "cpu, cuda or auto")->capture_default_str();
    app.add_option("--dtype", f.dtype, "storage type of weights and activations: fp32 or bf16")->capture_default_str();
    app.add_option("--attention", f.attention, "naive or flash")->capture_default_str();
}

void check_model_flags(const CLI::App& app, ModelFlags& f) {
    // Bounds far above any real model; they keep the sizes' products inside int arithmetic.
    constexpr int kMaxVocab = 1 << 24, kMaxContext = 1 << 20;
    const bool vocab = app.count("--vocab-size") > 0, context = app.count("--max-seq-len") > 0;
    if (vocab && (f.vocab_size < 1 || f.vocab_size > kMaxVocab))
        throw Error("--vocab-size", "must be in [1, " + std::to_string(kMaxVocab) + "], got " + std::to_string(f.vocab_size));
    if (context && (f.max_seq_len < 1 || f.max_seq_len > kMaxContext))
        throw Error("--max-seq-len", "must be in [1, " + std::to_string(kMaxContext) + "], got " + std::to_string(f.max_seq_len));
    if (f.init != "random" && (vocab || context || app.count("--model") > 0))
        throw Error(vocab ? "--vocab-size" : context ? "--max-seq-len" : "--model",
                    "applies to --init random only; " + f.init + " fixes the model");
    f.given = vocab || context || app.count("--model") > 0 || app.count("--init") > 0;
}

InitialModel initial_model(const ModelFlags& f) {
    InitialModel m;
    if (f.init == "random") {
        m.config = preset_config(f.model, f.vocab_size, f.max_seq_len);
        m.params = gpt2_init(ParamLayout(m.config), m.config, f.seed);
        m.source = "random:" + f.model;
        return m;
    }
    if (f.init.rfind("llmc:", 0) == 0) {
        LlmcModel l = load_llmc_model(f.init.substr(5));
        if (const size_t bad = count_non_finite(l.params.data(), l.params.size()))
            throw Error(f.init.substr(5), "holds " + std::to_string(bad) + " non-finite (NaN or Inf) parameters");
        m.config = l.config;
        m.params = std::move(l.params);
        m.source = f.init;
        return m;
    }
    if (f.init.rfind("hf:", 0) == 0) {
        HfModel h = load_hf_gpt2(f.init.substr(3));
        m.config = h.config;
        m.params = std::move(h.params);
        m.source = f.init;
        return m;
    }
    throw Error("--init", "expected 'random', 'llmc:PATH' or 'hf:DIR', got '" + f.init + "'");
}

}  // namespace sixnd::cli
