// The flags that say which model to build and where to run it, shared by every verb that
// runs a model (eval, train, sample).
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

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
    bool given = false;  // --init, --model, --vocab-size or --max-seq-len was on the command line
};

void add_model_flags(CLI::App& app, ModelFlags& f);
// After parsing: range checks (an explicit --vocab-size or --max-seq-len is never replaced by
// the preset's) and `given`. Throws Error naming the flag.
void check_model_flags(const CLI::App& app, ModelFlags& f);

struct InitialModel {
    GPTConfig config;
    std::vector<float> params;  // ParamLayout(config) order
    std::string source;         // what it came from, for logs
};
// The model the flags describe; throws when its parameters hold NaN or Inf (an llm.c file).
InitialModel initial_model(const ModelFlags& f);

}  // namespace sixnd::cli
