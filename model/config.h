// GPT-2 hyper-parameters and the named presets. The padded vocabulary (next multiple of 128)
// keeps the LM-head matmul on fast shapes; padded rows take no probability mass.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sixnd {

struct GPTConfig {
    int n_layer = 0;
    int n_head = 0;
    int n_embd = 0;
    int vocab_size = 0;
    int padded_vocab_size = 0;
    int max_seq_len = 0;

    // Checks the invariants (positive sizes, heads divide channels, padded >= vocab).
    void validate(const std::string& where) const;
    std::string describe() const;
    // The "model" record of run-log headers and checkpoints' meta.json, and back; from_json
    // throws nlohmann::json::exception on a missing or mistyped field (callers name the file).
    nlohmann::json to_json() const;
    static GPTConfig from_json(const nlohmann::json& j);
};

inline int pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

// tiny (tests), d6, d12 (llm.c's depth-N family: 64*N channels, N heads), gpt2-124m,
// gpt2-350m, gpt2-774m, gpt2-1558m. vocab_size 0 keeps GPT-2's 50257.
GPTConfig preset_config(const std::string& name, int vocab_size = 0, int max_seq_len = 0);
std::vector<std::string> preset_names();

}  // namespace sixnd
