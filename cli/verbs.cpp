#include "cli/verbs.h"

#include "core/error.h"

namespace sixnd::cli {

bool parse_flags(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            app.exit(e);
            return false;
        }
        throw Error("", e.what());
    }
    return true;
}

const std::vector<Verb>& verbs() {
    static const std::vector<Verb> table = {
        {"train", "train a GPT (one process, or many under mpirun)", run_train},
        {"sample", "generate text from a checkpoint", run_sample},
        {"eval", "loss of a model on a shard set", run_eval},
        {"data", "raw text -> filtered, deduplicated token shards", run_data},
        {"tokenizer", "byte-level BPE: train, encode, decode, import-gpt2", run_tokenizer},
        {"plan", "size a run (budget -> model, tokens, memory, time, $); --check RUN.jsonl", run_plan},
        {"ablate", "one knob, several values, several seeds -> results table with p-values", run_ablate},
        {"report", "plots (matplotlib) + report.md/html from runs or an ablation", run_report},
        {"export", "checkpoint -> Hugging Face directory (safetensors + config + tokenizer)", run_export},
    };
    return table;
}

}  // namespace sixnd::cli
