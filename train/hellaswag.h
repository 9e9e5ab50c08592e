// HellaSwag-style multiple choice (the public JSONL format: one object per line with `ctx`,
// `endings` and `label`). Each ending is scored by the model's cross-entropy on the ending's
// tokens given the context, tokenized as encode(ctx) followed by encode(" " + ending), as llm.c
// does. acc picks the ending with the lowest summed loss; acc_norm the lowest mean loss per
// ending token (llm.c's definition, which issue 16 names; the Eleuther harness instead divides
// the log-likelihood by the ending's length in characters). Ties go to the first ending.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {

struct HellaSwagItem {
    std::string ctx;
    std::vector<std::string> endings;
    int label = 0;
    int line = 0;      // 1-based line in the file
    std::string file;  // the file read_hellaswag read it from ("" for an item made in code)
};

// Reads every non-blank line; a malformed one throws Error("FILE:LINE", what is wrong). A
// directory or a device is refused naming it, and so is an empty ctx: with nothing before it,
// an ending's first token has no prediction to score, so a one-token ending would score no
// tokens at all (loss 0) and win both acc and acc_norm.
std::vector<HellaSwagItem> read_hellaswag(const std::string& path);

// Throws Error("FILE:LINE", ...) for the first ending longer than the model's context (window
// tokens), which no scoring could take: a run checks its items before training, not at its first
// evaluation, and `sixnd eval` before scoring any.
void check_endings_fit(const std::vector<HellaSwagItem>& items, const Tokenizer& tok, int window);

struct HellaSwagResult {
    int label = 0;
    std::vector<double> sum_loss;   // per ending: summed cross-entropy of its tokens (nats)
    std::vector<double> mean_loss;  // per ending: the same divided by its token count
    std::vector<int> tokens;        // per ending: tokens scored
    int pred = 0, pred_norm = 0;
};

// Scores one item: one batch of all endings, padded to the longest; when context + ending is
// longer than the model's context window, the context is cut from the left.
HellaSwagResult score_hellaswag_item(GPT& model, const Tokenizer& tok, const HellaSwagItem& item);

struct HellaSwagScore {
    long long items = 0, correct = 0, correct_norm = 0;
    double acc() const { return items ? static_cast<double>(correct) / static_cast<double>(items) : 0.0; }
    double acc_norm() const { return items ? static_cast<double>(correct_norm) / static_cast<double>(items) : 0.0; }
};

// Scores every item in order; on_item (if set) sees each one's result (progress, per-item output).
HellaSwagScore score_hellaswag(GPT& model, const Tokenizer& tok, const std::vector<HellaSwagItem>& items,
                               const std::function<void(size_t, const HellaSwagResult&)>& on_item = nullptr);

}  // namespace sixnd
