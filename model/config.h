// GPT hyper-parameters and the named presets. The padded vocabulary (next multiple of 128)
// keeps the LM-head matmul on fast shapes; padded rows take no probability mass.
//
// The architecture knobs default to GPT-2 exactly (learned positions, LayerNorm with biases,
// GELU MLP of 4C, multi-head attention, tied embeddings); each changes one thing:
//   pos      learned | rope   rotary q/k (rope_theta), no wpe tensor
//   norm     layernorm | rmsnorm   RMSNorm has a weight and no bias
//   mlp      gelu | swiglu | relu2; mlp_hidden H (0 = default: 4C, or for swiglu 8C/3 rounded
//            up to a multiple of 64, which keeps its parameter count near GELU's 8C^2)
//   qk_norm  RMS-normalise each q and k head vector (no weight) before rope and attention
//   n_kv_head  key/value heads (0 = n_head: multi-head; 1 = multi-query)
//   tie_embeddings  off: an lm_head.weight of its own, wte only embeds
//   bias     off: no Linear or LayerNorm biases
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd {

enum class PosKind { learned, rope };
enum class NormKind { layernorm, rmsnorm };
enum class MlpKind { gelu, swiglu, relu2 };

PosKind parse_pos(const std::string& s);    // throws Error naming --pos
NormKind parse_norm(const std::string& s);  // --norm
MlpKind parse_mlp(const std::string& s);    // --mlp
const char* pos_name(PosKind k);
const char* norm_name(NormKind k);
const char* mlp_name(MlpKind k);

// Bounds on a model's sizes, far above any real model; they keep the sizes' products inside
// int arithmetic. The model flags and every model record read from a file are held to them.
constexpr int kMaxVocab = 1 << 24, kMaxContext = 1 << 20, kMaxDim = 1 << 16;

struct GPTConfig {
    int n_layer = 0;
    int n_head = 0;
    int n_embd = 0;
    int vocab_size = 0;
    int padded_vocab_size = 0;
    int max_seq_len = 0;

    PosKind pos = PosKind::learned;
    float rope_theta = 10000.0f;
    NormKind norm = NormKind::layernorm;
    MlpKind mlp = MlpKind::gelu;
    int mlp_hidden = 0;
    bool qk_norm = false;
    int n_kv_head = 0;
    bool tie_embeddings = true;
    bool bias = true;

    int head_size() const { return n_embd / n_head; }
    int kv_heads() const { return n_kv_head > 0 ? n_kv_head : n_head; }
    int qkv_width() const { return n_embd + 2 * kv_heads() * head_size(); }
    int hidden() const;  // the MLP's hidden width H (validate() holds it within an int)
    long long hidden_wide() const;
    // Rows of the c_fc output: [gate | up] (2H) for swiglu, else H.
    int fc_width() const { return mlp == MlpKind::swiglu ? 2 * hidden() : hidden(); }
    // True when every knob is GPT-2's (llm.c and Hugging Face GPT-2 files can hold the model).
    bool is_gpt2() const;
    // The first knob that differs from GPT-2, as "--flag value", or "" for GPT-2.
    std::string non_gpt2_knob() const;
    // Throws Error(where, ...) naming that knob unless the model is GPT-2; `format` says what
    // holds GPT-2 only ("llm.c model files").
    void require_gpt2(const std::string& where, const std::string& format) const;

    // Checks the invariants (sizes within their bounds, heads divide channels, padded >= vocab,
    // kv heads divide heads, rope needs an even head size, ...).
    void validate(const std::string& where) const;
    // Throws Error("--seq-len", ...) when sequences of seq_len tokens do not fit max_seq_len.
    void require_seq_len(int seq_len) const;
    std::string describe() const;
    // The "model" record of run-log headers and checkpoints' meta.json, and back; from_json
    // throws nlohmann::json::exception on a missing or mistyped field (callers name the file),
    // and Error(where, ...) on a size that is no int or a knob value that does not exist.
    // A record without the knob fields (written before they existed) reads as GPT-2.
    nlohmann::json to_json() const;
    static GPTConfig from_json(const nlohmann::json& j, const std::string& where = "model");
};

inline int pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

// GPT-2 shapes: tiny (tests), d6, d12 (llm.c's depth-N family: 64*N channels, N heads),
// gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m.
// Llama-style (rope, rmsnorm, swiglu, grouped-query attention with n_head/2 kv heads (n_head/3
// from 12 heads up where 3 divides: d12 has 4 of 12; odd head counts 1), untied embeddings, no
// biases): llama-tiny, llama-d6, llama-d12.
// Speedrun-style (rope, rmsnorm, relu2, qk-norm, untied, no biases): speedrun-tiny,
// speedrun-d6, speedrun-d12.
// vocab_size 0 keeps the preset's (GPT-2's 50257 except tiny's 101).
GPTConfig preset_config(const std::string& name, int vocab_size = 0, int max_seq_len = 0);
// The same with the preset's depth, heads and width replaced where shape gives them (> 0); the
// preset's style then applies to that shape (the llama kv-head rule to the new head count). Not
// validated, beyond n_head dividing n_embd: the caller applies its other knobs (a --pos learned
// makes an odd head size legal), then validates.
struct PresetShape {
    int n_layer = 0, n_head = 0, n_embd = 0;
};
GPTConfig preset_config(const std::string& name, int vocab_size, int max_seq_len, const PresetShape& shape);
std::vector<std::string> preset_names();

}  // namespace sixnd
