// Parameter initialisation and llm.c model-file import/export, all through host FP32 vectors
// in ParamLayout order; the model casts to its storage dtype when it uploads.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/param_layout.h"

namespace sixnd {

// GPT-2 init: weights and embeddings N(0, 0.02); the residual output projections
// (attn.c_proj, mlp.c_proj) N(0, 0.02/sqrt(2*n_layer)); biases 0; layernorm weight 1, bias 0;
// the padded vocabulary rows of wte 0. Each tensor draws from its own stream (seed, tensor
// index), so a tensor's values do not depend on the ones before it.
std::vector<float> gpt2_init(const ParamLayout& layout, const GPTConfig& cfg, uint64_t seed);

// llm.c model files: 256 int32 header (20240326, version, maxT, V, L, NH, C, Vp), then all
// parameters in llm.c's order (each kind of tensor for all layers together). Version 3 holds
// FP32, version 5 BF16.
struct LlmcModel {
    GPTConfig config;
    int version = 0;
    std::vector<float> params;  // in ParamLayout(config) order
};
LlmcModel load_llmc_model(const std::string& path);
// Writes version 3 (fp32) or 5 (bf16), atomically.
void save_llmc_model(const std::string& path, const GPTConfig& cfg, const std::vector<float>& params, int version);

}  // namespace sixnd
