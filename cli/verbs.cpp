#include "cli/verbs.h"

namespace sixnd::cli {

const std::vector<Verb>& verbs() {
    static const std::vector<Verb> table = {
        {"train", "train a GPT (one process, or many under mpirun)", run_train},
        {"sample", "generate text from a checkpoint", run_sample},
        {"eval", "loss of a model on a shard set", run_eval},
        {"data", "raw text -> filtered, deduplicated token shards", run_data},
        {"tokenizer", "byte-level BPE: train, encode, decode, import-gpt2", run_tokenizer},
    };
    return table;
}

}  // namespace sixnd::cli
