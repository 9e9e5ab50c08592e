#include "model/config.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/error.h"

namespace sixnd {

namespace {

enum Style { kGpt2, kLlama, kSpeedrun };

struct Preset {
    const char* name;
    int n_layer, n_head, n_embd, vocab_size, max_seq_len;
    Style style;
};

const Preset kPresets[] = {
    {"tiny", 2, 4, 48, 101, 64, kGpt2},
    {"d6", 6, 6, 384, 50257, 1024, kGpt2},
    {"d12", 12, 12, 768, 50257, 1024, kGpt2},
    {"gpt2-124m", 12, 12, 768, 50257, 1024, kGpt2},
    {"gpt2-350m", 24, 16, 1024, 50257, 1024, kGpt2},
    {"gpt2-774m", 36, 20, 1280, 50257, 1024, kGpt2},
    {"gpt2-1558m", 48, 25, 1600, 50257, 1024, kGpt2},
    {"llama-tiny", 2, 4, 48, 101, 64, kLlama},
    {"llama-d6", 6, 6, 384, 50257, 1024, kLlama},
    {"llama-d12", 12, 12, 768, 50257, 1024, kLlama},
    {"speedrun-tiny", 2, 4, 48, 101, 64, kSpeedrun},
    {"speedrun-d6", 6, 6, 384, 50257, 1024, kSpeedrun},
    {"speedrun-d12", 12, 12, 768, 50257, 1024, kSpeedrun},
};

void apply_style(GPTConfig& c, Style s) {
    if (s == kGpt2) return;
    c.pos = PosKind::rope;
    c.norm = NormKind::rmsnorm;
    c.tie_embeddings = false;
    c.bias = false;
    if (s == kLlama) {
        c.mlp = MlpKind::swiglu;
        // Grouped-query: n_head/3 kv heads from 12 heads up where 3 divides, else n_head/2;
        // an odd head count (an --n-head override) gets one (multi-query).
        c.n_kv_head = c.n_head >= 12 && c.n_head % 3 == 0 ? c.n_head / 3 : c.n_head % 2 == 0 ? c.n_head / 2 : 1;
    } else {
        c.mlp = MlpKind::relu2;
        c.qk_norm = true;
    }
}

}  // namespace

PosKind parse_pos(const std::string& s) {
    if (s == "learned") return PosKind::learned;
    if (s == "rope") return PosKind::rope;
    throw Error("--pos", "unknown position encoding '" + s + "' (expected learned or rope)");
}
NormKind parse_norm(const std::string& s) {
    if (s == "layernorm") return NormKind::layernorm;
    if (s == "rmsnorm") return NormKind::rmsnorm;
    throw Error("--norm", "unknown norm '" + s + "' (expected layernorm or rmsnorm)");
}
MlpKind parse_mlp(const std::string& s) {
    if (s == "gelu") return MlpKind::gelu;
    if (s == "swiglu") return MlpKind::swiglu;
    if (s == "relu2") return MlpKind::relu2;
    throw Error("--mlp", "unknown MLP '" + s + "' (expected gelu, swiglu or relu2)");
}
const char* pos_name(PosKind k) { return k == PosKind::rope ? "rope" : "learned"; }
const char* norm_name(NormKind k) { return k == NormKind::rmsnorm ? "rmsnorm" : "layernorm"; }
const char* mlp_name(MlpKind k) {
    return k == MlpKind::swiglu ? "swiglu" : k == MlpKind::relu2 ? "relu2" : "gelu";
}

// In 64 bits: validate()'s message describes sizes it has not yet bounded.
long long GPTConfig::hidden_wide() const {
    if (mlp_hidden > 0) return mlp_hidden;
    if (mlp == MlpKind::swiglu) return (8LL * n_embd / 3 + 63) / 64 * 64;
    return 4LL * n_embd;
}

int GPTConfig::hidden() const { return static_cast<int>(hidden_wide()); }

std::string GPTConfig::non_gpt2_knob() const {
    if (pos != PosKind::learned) return std::string("--pos ") + pos_name(pos);
    if (norm != NormKind::layernorm) return std::string("--norm ") + norm_name(norm);
    if (mlp != MlpKind::gelu) return std::string("--mlp ") + mlp_name(mlp);
    if (hidden_wide() != 4LL * n_embd) return "--mlp-hidden " + std::to_string(hidden_wide());
    if (qk_norm) return "--qk-norm on";
    if (kv_heads() != n_head) return "--n-kv-head " + std::to_string(kv_heads());
    if (!tie_embeddings) return "--tie-embeddings off";
    if (!bias) return "--bias off";
    return "";
}

bool GPTConfig::is_gpt2() const { return non_gpt2_knob().empty(); }

void GPTConfig::require_gpt2(const std::string& where, const std::string& format) const {
    const std::string knob = non_gpt2_knob();
    if (!knob.empty()) throw Error(where, format + " hold GPT-2 only, and this model has " + knob);
}

void GPTConfig::require_seq_len(int seq_len) const {
    if (seq_len > max_seq_len)
        throw Error("--seq-len", "sequence length " + std::to_string(seq_len) + " exceeds the model's max_seq_len " +
                                     std::to_string(max_seq_len));
}

void GPTConfig::validate(const std::string& where) const {
    SIXND_CHECK(n_layer > 0 && n_head > 0 && n_embd > 0 && vocab_size > 0 && max_seq_len > 0, where,
                "model sizes must be positive (" + describe() + ")");
    SIXND_CHECK(n_layer <= kMaxDim && n_head <= kMaxDim && n_embd <= kMaxDim && mlp_hidden <= kMaxDim &&
                    n_kv_head <= kMaxDim && vocab_size <= kMaxVocab && padded_vocab_size <= kMaxVocab &&
                    max_seq_len <= kMaxContext,
                where,
                "model sizes beyond any real model (n_layer, n_head, n_embd, mlp_hidden, n_kv_head at most " +
                    std::to_string(kMaxDim) + ", vocabulary " + std::to_string(kMaxVocab) + ", context " +
                    std::to_string(kMaxContext) + "): " + describe());
    SIXND_CHECK(n_embd % n_head == 0, where,
                "n_embd " + std::to_string(n_embd) + " is not divisible by n_head " + std::to_string(n_head));
    SIXND_CHECK(padded_vocab_size >= vocab_size, where, "padded vocabulary is smaller than the vocabulary");
    SIXND_CHECK(n_kv_head >= 0 && n_kv_head <= n_head && n_head % kv_heads() == 0, where,
                "n_kv_head " + std::to_string(n_kv_head) + " must divide n_head " + std::to_string(n_head));
    SIXND_CHECK(mlp_hidden >= 0, where, "mlp_hidden must be positive (0 = the default), got " + std::to_string(mlp_hidden));
    SIXND_CHECK(pos != PosKind::rope || head_size() % 2 == 0, where,
                "rope needs an even head size, got " + std::to_string(head_size()));
    SIXND_CHECK(pos != PosKind::rope || (std::isfinite(rope_theta) && rope_theta > 1.0f), where,
                "rope_theta must be a finite number above 1");
}

nlohmann::json GPTConfig::to_json() const {
    return {{"n_layer", n_layer},
            {"n_head", n_head},
            {"n_embd", n_embd},
            {"vocab_size", vocab_size},
            {"padded_vocab_size", padded_vocab_size},
            {"max_seq_len", max_seq_len},
            {"pos", pos_name(pos)},
            {"rope_theta", rope_theta},
            {"norm", norm_name(norm)},
            {"mlp", mlp_name(mlp)},
            {"mlp_hidden", hidden()},
            {"qk_norm", qk_norm},
            {"n_kv_head", kv_heads()},
            {"tie_embeddings", tie_embeddings},
            {"bias", bias}};
}

GPTConfig GPTConfig::from_json(const nlohmann::json& j, const std::string& where) {
    // nlohmann's get<int> would wrap a larger number around into a plausible-looking size.
    auto integer = [&](const char* key, std::optional<int> def = std::nullopt) {
        if (def && !j.contains(key)) return *def;
        const nlohmann::json& v = j.at(key);
        if (!v.is_number_integer() || v.get<long long>() < INT_MIN || v.get<long long>() > INT_MAX)
            throw Error(where, std::string("model.") + key + " is not an integer in int range: " + v.dump());
        return v.get<int>();
    };
    auto knob = [&](const char* key, const char* def, auto parse) {
        const std::string text = j.contains(key) ? j.at(key).get<std::string>() : def;
        try {
            return parse(text);
        } catch (const Error& e) {
            throw Error(where, std::string("model.") + key + ": " + e.fault());
        }
    };
    GPTConfig c;
    c.n_layer = integer("n_layer");
    c.n_head = integer("n_head");
    c.n_embd = integer("n_embd");
    c.vocab_size = integer("vocab_size");
    c.padded_vocab_size = integer("padded_vocab_size");
    c.max_seq_len = integer("max_seq_len");
    c.pos = knob("pos", "learned", parse_pos);
    c.rope_theta = j.value("rope_theta", c.rope_theta);
    c.norm = knob("norm", "layernorm", parse_norm);
    c.mlp = knob("mlp", "gelu", parse_mlp);
    c.mlp_hidden = integer("mlp_hidden", 0);
    c.qk_norm = j.value("qk_norm", false);
    c.n_kv_head = integer("n_kv_head", 0);
    c.tie_embeddings = j.value("tie_embeddings", true);
    c.bias = j.value("bias", true);
    return c;
}

std::string GPTConfig::describe() const {
    std::string s = "n_layer=" + std::to_string(n_layer) + " n_head=" + std::to_string(n_head) +
                    " n_embd=" + std::to_string(n_embd) + " vocab=" + std::to_string(vocab_size) +
                    " padded_vocab=" + std::to_string(padded_vocab_size) + " max_seq_len=" + std::to_string(max_seq_len);
    if (is_gpt2()) return s;
    char theta[32];
    std::snprintf(theta, sizeof theta, "%g", static_cast<double>(rope_theta));
    s += std::string(" pos=") + pos_name(pos);
    if (pos == PosKind::rope) s += std::string(" rope_theta=") + theta;
    s += std::string(" norm=") + norm_name(norm) + " mlp=" + mlp_name(mlp) + " mlp_hidden=" + std::to_string(hidden_wide()) +
         " qk_norm=" + (qk_norm ? "on" : "off") + " n_kv_head=" + std::to_string(kv_heads()) +
         " tie_embeddings=" + (tie_embeddings ? "on" : "off") + " bias=" + (bias ? "on" : "off");
    return s;
}

GPTConfig preset_config(const std::string& name, int vocab_size, int max_seq_len) {
    GPTConfig c = preset_config(name, vocab_size, max_seq_len, PresetShape{});
    c.validate("--model " + name);
    return c;
}

GPTConfig preset_config(const std::string& name, int vocab_size, int max_seq_len, const PresetShape& shape) {
    for (const auto& p : kPresets) {
        if (name != p.name) continue;
        GPTConfig c;
        c.n_layer = shape.n_layer > 0 ? shape.n_layer : p.n_layer;
        c.n_head = shape.n_head > 0 ? shape.n_head : p.n_head;
        c.n_embd = shape.n_embd > 0 ? shape.n_embd : p.n_embd;
        c.vocab_size = vocab_size > 0 ? vocab_size : p.vocab_size;
        c.padded_vocab_size = pad_vocab(c.vocab_size);
        c.max_seq_len = max_seq_len > 0 ? max_seq_len : p.max_seq_len;
        apply_style(c, p.style);
        if (c.n_embd % c.n_head != 0)
            throw Error(shape.n_embd > 0 ? "--n-embd" : "--n-head", "n_embd " + std::to_string(c.n_embd) +
                                                                    " is not divisible by n_head " + std::to_string(c.n_head));
        return c;
    }
    std::string names;
    for (const auto& p : kPresets) names += std::string(names.empty() ? "" : ", ") + p.name;
    throw Error("--model", "unknown preset '" + name + "' (known: " + names + ")");
}

std::vector<std::string> preset_names() {
    std::vector<std::string> out;
    for (const auto& p : kPresets) out.emplace_back(p.name);
    return out;
}

}  // namespace sixnd
