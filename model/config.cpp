#include "model/config.h"

#include "core/error.h"

namespace sixnd {

namespace {

struct Preset {
    const char* name;
    int n_layer, n_head, n_embd, vocab_size, max_seq_len;
};

const Preset kPresets[] = {
    {"tiny", 2, 4, 48, 101, 64},
    {"d6", 6, 6, 384, 50257, 1024},
    {"d12", 12, 12, 768, 50257, 1024},
    {"gpt2-124m", 12, 12, 768, 50257, 1024},
    {"gpt2-350m", 24, 16, 1024, 50257, 1024},
    {"gpt2-774m", 36, 20, 1280, 50257, 1024},
    {"gpt2-1558m", 48, 25, 1600, 50257, 1024},
};

}  // namespace

void GPTConfig::validate(const std::string& where) const {
    SIXND_CHECK(n_layer > 0 && n_head > 0 && n_embd > 0 && vocab_size > 0 && max_seq_len > 0, where,
                "model sizes must be positive (" + describe() + ")");
    SIXND_CHECK(n_embd % n_head == 0, where,
                "n_embd " + std::to_string(n_embd) + " is not divisible by n_head " + std::to_string(n_head));
    SIXND_CHECK(padded_vocab_size >= vocab_size, where, "padded vocabulary is smaller than the vocabulary");
}

nlohmann::json GPTConfig::to_json() const {
    return {{"n_layer", n_layer},       {"n_head", n_head},
            {"n_embd", n_embd},         {"vocab_size", vocab_size},
            {"padded_vocab_size", padded_vocab_size}, {"max_seq_len", max_seq_len}};
}

GPTConfig GPTConfig::from_json(const nlohmann::json& j) {
    GPTConfig c;
    c.n_layer = j.at("n_layer");
    c.n_head = j.at("n_head");
    c.n_embd = j.at("n_embd");
    c.vocab_size = j.at("vocab_size");
    c.padded_vocab_size = j.at("padded_vocab_size");
    c.max_seq_len = j.at("max_seq_len");
    return c;
}

std::string GPTConfig::describe() const {
    return "n_layer=" + std::to_string(n_layer) + " n_head=" + std::to_string(n_head) +
           " n_embd=" + std::to_string(n_embd) + " vocab=" + std::to_string(vocab_size) +
           " padded_vocab=" + std::to_string(padded_vocab_size) + " max_seq_len=" + std::to_string(max_seq_len);
}

GPTConfig preset_config(const std::string& name, int vocab_size, int max_seq_len) {
    for (const auto& p : kPresets) {
        if (name != p.name) continue;
        GPTConfig c;
        c.n_layer = p.n_layer;
        c.n_head = p.n_head;
        c.n_embd = p.n_embd;
        c.vocab_size = vocab_size > 0 ? vocab_size : p.vocab_size;
        c.padded_vocab_size = pad_vocab(c.vocab_size);
        c.max_seq_len = max_seq_len > 0 ? max_seq_len : p.max_seq_len;
        c.validate("--model " + name);
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
