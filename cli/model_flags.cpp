#include "cli/model_flags.h"

#include <cmath>

#include "cli/on_off.h"
#include "cli/uint64_flag.h"
#include "core/error.h"
#include "model/hf_gpt2.h"
#include "core/finite.h"
#include "model/init.h"
#include "model/gpt.h"
#include "model/param_layout.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"

namespace sixnd::cli {

namespace {
const char* const kKnobFlags[] = {"--n-layer", "--n-head",   "--n-embd",    "--pos",       "--rope-theta",
                                  "--norm",    "--mlp",      "--mlp-hidden", "--qk-norm",  "--n-kv-head",
                                  "--tie-embeddings", "--bias"};
}  // namespace

void add_model_shape_flags(CLI::App& app, ModelFlags& f) {
    app.add_option("--model", f.model,
                   "preset: tiny, d6, d12, gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m (GPT-2); "
                   "llama-tiny, llama-d6, llama-d12; speedrun-tiny, speedrun-d6, speedrun-d12");
    app.add_option("--n-layer", f.n_layer, "layers (default: the preset's)");
    app.add_option("--n-head", f.n_head, "attention heads (default: the preset's)");
    app.add_option("--n-embd", f.n_embd, "channels (default: the preset's)");
    app.add_option("--pos", f.pos, "position encoding: learned or rope (default: the preset's)");
    app.add_option("--rope-theta", f.rope_theta, "rope base (default: the preset's, 10000)");
    app.add_option("--norm", f.norm, "layernorm or rmsnorm (default: the preset's)");
    app.add_option("--mlp", f.mlp, "gelu, swiglu or relu2 (default: the preset's)");
    app.add_option("--mlp-hidden", f.mlp_hidden, "MLP hidden width (0: 4C; swiglu 8C/3 rounded up to a multiple of 64)");
    app.add_option("--qk-norm", f.qk_norm, "RMS-normalise q and k heads: on or off (default: the preset's)");
    app.add_option("--n-kv-head", f.n_kv_head, "key/value heads, dividing --n-head (0: n_head; 1: multi-query)");
    app.add_option("--tie-embeddings", f.tie_embeddings, "LM head tied to wte: on or off (default: the preset's)");
    app.add_option("--bias", f.bias, "Linear and LayerNorm biases: on or off (default: the preset's)");
    app.add_option("--vocab-size", f.vocab_size, "vocabulary size (default: the preset's)");
    app.add_option("--max-seq-len", f.max_seq_len, "context length (default: the preset's)");
}

void add_model_flags(CLI::App& app, ModelFlags& f) {
    app.add_option("--init", f.init, "random, llmc:PATH (an llm.c model file, version 3 or 5) or hf:DIR (a Hugging Face GPT-2 directory)")
        ->capture_default_str();
    add_model_shape_flags(app, f);
    app.get_option("--model")->capture_default_str();  // d6, for --init random
    app.add_option("--seed", f.seed, "random seed")->capture_default_str()->check(uint64_value());
    app.add_option("--device", f.device, "cpu, cuda or auto")->capture_default_str();
    app.add_option("--dtype", f.dtype, "storage type of weights and activations: fp32 or bf16")->capture_default_str();
    app.add_option("--attention", f.attention, "naive or flash")->capture_default_str();
}

void check_model_shape_flags(const CLI::App& app, const ModelFlags& f) {
    const bool vocab = app.count("--vocab-size") > 0, context = app.count("--max-seq-len") > 0;
    if (vocab && (f.vocab_size < 1 || f.vocab_size > kMaxVocab))
        throw Error("--vocab-size", "must be in [1, " + std::to_string(kMaxVocab) + "], got " + std::to_string(f.vocab_size));
    if (context && (f.max_seq_len < 1 || f.max_seq_len > kMaxContext))
        throw Error("--max-seq-len", "must be in [1, " + std::to_string(kMaxContext) + "], got " + std::to_string(f.max_seq_len));
    auto dim = [&](const char* flag, int v, int lo) {
        if (app.count(flag) > 0 && (v < lo || v > kMaxDim))
            throw Error(flag, "must be in [" + std::to_string(lo) + ", " + std::to_string(kMaxDim) + "], got " +
                                  std::to_string(v));
    };
    dim("--n-layer", f.n_layer, 1);
    dim("--n-head", f.n_head, 1);
    dim("--n-embd", f.n_embd, 1);
    dim("--mlp-hidden", f.mlp_hidden, 0);
    dim("--n-kv-head", f.n_kv_head, 0);
    if (app.count("--rope-theta") > 0 && !(std::isfinite(f.rope_theta) && f.rope_theta > 1.0f))
        throw Error("--rope-theta", "must be a finite number above 1, got " + app.get_option("--rope-theta")->results().back());
}

std::string first_knob_flag(const CLI::App& app) {
    for (const char* k : kKnobFlags)
        if (app.count(k) > 0) return k;
    return "";
}

void check_model_flags(const CLI::App& app, ModelFlags& f) {
    check_model_shape_flags(app, f);
    const bool vocab = app.count("--vocab-size") > 0, context = app.count("--max-seq-len") > 0;
    const std::string knob = first_knob_flag(app);
    if (f.init != "random" && (vocab || context || app.count("--model") > 0 || !knob.empty()))
        throw Error(vocab ? "--vocab-size" : context ? "--max-seq-len" : !knob.empty() ? knob : "--model",
                    "applies to --init random only; " + f.init + " fixes the model");
    f.given = vocab || context || !knob.empty() || app.count("--model") > 0 || app.count("--init") > 0;
    if (f.init == "random") random_config(f);  // every knob value, and the model they make, checked now
}

GPTConfig random_config(const ModelFlags& f) {
    GPTConfig c = preset_config(f.model, f.vocab_size, f.max_seq_len, PresetShape{f.n_layer, f.n_head, f.n_embd});
    if (!f.pos.empty()) c.pos = parse_pos(f.pos);
    if (f.rope_theta != 0.0f) c.rope_theta = f.rope_theta;
    if (!f.norm.empty()) c.norm = parse_norm(f.norm);
    if (!f.mlp.empty()) c.mlp = parse_mlp(f.mlp);
    if (f.mlp_hidden != -1) c.mlp_hidden = f.mlp_hidden;
    if (!f.qk_norm.empty()) c.qk_norm = parse_on_off("--qk-norm", f.qk_norm);
    if (!f.tie_embeddings.empty()) c.tie_embeddings = parse_on_off("--tie-embeddings", f.tie_embeddings);
    if (!f.bias.empty()) c.bias = parse_on_off("--bias", f.bias);
    if (f.n_kv_head != -1) {
        if (f.n_kv_head > c.n_head || (f.n_kv_head > 0 && c.n_head % f.n_kv_head != 0))
            throw Error("--n-kv-head", "must divide the " + std::to_string(c.n_head) + " heads (0: as many as heads), got " +
                                           std::to_string(f.n_kv_head));
        c.n_kv_head = f.n_kv_head;
    }
    // A theta the model never uses would still be recorded as the model's, and a resume that
    // changed it would pass as a resume of the same model.
    if (f.rope_theta != 0.0f && c.pos != PosKind::rope)
        throw Error("--rope-theta", "applies to --pos rope only; this model learns its positions");
    // Named by what the user gave: --pos rope, else the shape flags that made the preset's rope odd.
    if (c.pos == PosKind::rope && c.head_size() % 2 != 0)
        throw Error(!f.pos.empty() ? "--pos" : f.n_embd > 0 ? "--n-embd" : f.n_head > 0 ? "--n-head" : "--model",
                    "rope" + std::string(f.pos.empty() ? " (the " + f.model + " preset's)" : "") +
                        " needs an even head size; n_embd/n_head is " + std::to_string(c.head_size()) +
                        (f.pos.empty() ? ": change the shape, or give --pos learned" : ""));
    c.validate("--model " + f.model);
    return c;
}

InitialModel initial_model(const ModelFlags& f) {
    InitialModel m;
    if (f.init == "random") {
        m.config = random_config(f);
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

void set_checkpoint_params(GPT& model, MemoryBackend& mem, const CheckpointReader& ck) {
    const std::vector<char> params = restore_params(ck, model.layout());
    mem.copy_to_device(model.params(), params.data(), params.size());
}

}  // namespace sixnd::cli
