// Hugging Face GPT-2 directories: what transformers' GPT2LMHeadModel saves and loads —
// config.json, generation_config.json and model.safetensors. The mapping from sixnd's layout:
//   wte [Vp, C]        -> transformer.wte.weight [V, C]   (the vocabulary padding cut off)
//   wpe                -> transformer.wpe.weight
//   h.{i}.*.weight     -> transformer.h.{i}.*.weight, matrices transposed: transformers' Conv1D
//                         keeps (in, out), sixnd [out, in]
//   biases, layernorms -> the same name under transformer.
// The LM head is tied to wte, so, as transformers itself does, no lm_head.weight is written.
// Writing and reading both go one tensor at a time: no second copy of the model is held.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/config.h"
#include "model/param_layout.h"

namespace sixnd {

// Writes config.json, generation_config.json and model.safetensors (in `out` dtype) into the
// existing directory dir. `params` is a flat parameter buffer of storage type `src` in
// `layout` (any unit alignment). eos_token_id, when known, goes into both configs. progress,
// if given, is called after each tensor with (bytes written, bytes in all).
void save_hf_gpt2(const std::string& dir, const GPTConfig& cfg, const ParamLayout& layout, const void* params, DType src,
                  DType out, std::optional<int> eos_token_id,
                  const std::function<void(size_t, size_t)>& progress = nullptr);

// Whether dir/model.safetensors is one save_hf_gpt2 wrote (its header carries sixnd's mark): a
// directory holding anything else under an export's file names — a downloaded model, the user's
// own config.json — is not sixnd's to replace.
bool is_sixnd_export(const std::string& dir);

struct HfModel {
    GPTConfig config;
    std::string dtype;          // of the stored parameters: F32, F16 or BF16
    std::vector<float> params;  // in ParamLayout(config) order, padding zero
};

// Reads a GPT-2 directory (config.json + model.safetensors, parameters in F32, F16 or BF16;
// names with or without the "transformer." prefix; a tied lm_head.weight and the attention
// mask buffers are accepted). Anything that is not GPT-2 as sixnd computes it — another
// model_type or activation, an untied head, a missing or misshapen tensor — is refused with
// one Error naming the file and the fault.
HfModel load_hf_gpt2(const std::string& dir);

}  // namespace sixnd
