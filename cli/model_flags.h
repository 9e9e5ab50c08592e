// The flags that say which model to build and where to run it, shared by every verb that
// runs a model (eval, train, sample).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace sixnd {
class CheckpointReader;
class GPT;
class MemoryBackend;
}  // namespace sixnd

namespace sixnd::cli {

struct ModelFlags {
    std::string init = "random";  // random | llmc:PATH | hf:DIR
    std::string model = "d6";
    int vocab_size = 0;           // 0: the preset's
    int max_seq_len = 0;          // 0: the preset's
    uint64_t seed = 1337;
    std::string device = "auto";
    std::string dtype = "bf16";
    std::string attention = "flash";
    // Shape and architecture knobs over the preset, for --init random (0 / "" = the preset's).
    int n_layer = 0, n_head = 0, n_embd = 0;
    std::string pos, norm, mlp, qk_norm, tie_embeddings, bias;
    float rope_theta = 0.0f;
    int mlp_hidden = -1, n_kv_head = -1;  // -1: the preset's
    bool given = false;  // --init, --model, --vocab-size, --max-seq-len or a knob was on the command line
};

void add_model_flags(CLI::App& app, ModelFlags& f);
// The model's shape alone: --model, the knobs, --vocab-size and --max-seq-len (what `sixnd plan`
// sizes a run by, with a --device of its own).
void add_model_shape_flags(CLI::App& app, ModelFlags& f);
// After parsing: range checks (an explicit --vocab-size or --max-seq-len is never replaced by
// the preset's; every knob value is checked, and the config they build validated) and `given`.
// Throws Error naming the flag.
void check_model_flags(const CLI::App& app, ModelFlags& f);
// The range checks of the shape flags that were given (bounds only: random_config checks how
// they combine).
void check_model_shape_flags(const CLI::App& app, const ModelFlags& f);
// The first knob flag (--n-layer ... --bias) on the command line, or "".
std::string first_knob_flag(const CLI::App& app);

struct InitialModel {
    GPTConfig config;
    std::vector<float> params;  // ParamLayout(config) order
    std::string source;         // what it came from, for logs
};
// The config of --init random: the preset with the knob flags applied.
GPTConfig random_config(const ModelFlags& f);
// The model the flags describe; throws when its parameters hold NaN or Inf (an llm.c file).
InitialModel initial_model(const ModelFlags& f);

// A checkpoint's parameters into model (built from ck.meta().model, in ck's dtype, on mem),
// resharded from the layout the checkpoint was written with; non-finite ones are refused.
void set_checkpoint_params(GPT& model, MemoryBackend& mem, const CheckpointReader& ck);

}  // namespace sixnd::cli
