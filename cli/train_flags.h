// The flags of `sixnd train`, in one place: train parses them, and `sixnd ablate` reads a base
// config file through them as train would (which keys it sets, on which line).
#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "cli/model_flags.h"
#include "train/trainer.h"

namespace sixnd::cli {

// Where each flag lands; the strings are parsed after CLI11 has read them.
struct TrainFlags {
    std::string config;
    ModelFlags model;
    TrainOptions options;
    std::string recompute = "none", shuffle = "on", schedule = "cosine", master = "on", optimizer = "adamw";
    std::string on_spike = "warn", inject_lr;
    bool check_only = false;
};

void add_train_flags(CLI::App& app, TrainFlags& f);

}  // namespace sixnd::cli
