#include "train/hellaswag.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/byte_order_mark.h"
#include "core/error.h"
#include "core/json_fault.h"
#include "core/printable.h"

namespace sixnd {

std::vector<HellaSwagItem> read_hellaswag(const std::string& path) {
    // A directory opens and reads as empty, and a device such as /dev/zero never ends its first
    // line: both would only say "holds no items" (the second after taking all memory).
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw Error(path, "is a directory, not a HellaSwag JSONL file");
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) throw Error(path, "is a device, not a HellaSwag JSONL file");
    std::ifstream in(path);
    if (!in) throw Error(path, "cannot open");
    std::vector<HellaSwagItem> items;
    std::string text;
    for (int line = 1; std::getline(in, text); line++) {
        // A byte order mark starts the file, not its first item: left in, a first line that is
        // otherwise blank would read as JSON with nothing in it.
        if (line == 1) {
            refuse_wide_text(text, path);
            text.erase(0, utf8_bom_size(text));
        }
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = path + ":" + std::to_string(line);
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
            // nlohmann's text quotes the bytes it last read, which may be invalid UTF-8.
            throw Error(where, "not valid JSON: " + printable(json_fault(e)));
        }
        if (!j.is_object()) throw Error(where, "not a JSON object");
        HellaSwagItem it;
        it.line = line;
        it.file = path;
        if (!j.contains("ctx") || !j["ctx"].is_string()) throw Error(where, "needs \"ctx\" (a string)");
        it.ctx = j["ctx"];
        if (it.ctx.empty())
            throw Error(where, "\"ctx\" is empty: an ending's first token needs a context to be predicted from");
        if (!j.contains("endings") || !j["endings"].is_array() || j["endings"].size() < 2)
            throw Error(where, "needs \"endings\" (an array of at least two strings)");
        for (const auto& e : j["endings"]) {
            if (!e.is_string()) throw Error(where, "every ending must be a string");
            if (e.get<std::string>().empty()) throw Error(where, "an ending is empty");
            it.endings.push_back(e);
        }
        if (!j.contains("label") || !j["label"].is_number_integer()) throw Error(where, "needs \"label\" (an integer)");
        const long long label = j["label"];
        if (label < 0 || label >= static_cast<long long>(it.endings.size()))
            throw Error(where, "label " + j["label"].dump() + " is not the index of one of the " +
                                   std::to_string(it.endings.size()) + " endings");
        it.label = static_cast<int>(label);
        items.push_back(std::move(it));
    }
    if (in.bad()) throw Error(path, "read failed");
    if (items.empty()) throw Error(path, "holds no items");
    return items;
}

namespace {

// Ending b's tokens, encoded after a space as llm.c does; one longer than the window can never be
// scored.
std::vector<uint32_t> ending_tokens(const Tokenizer& tok, const HellaSwagItem& item, int b, int window) {
    std::vector<uint32_t> end = tok.encode_ordinary(" " + item.endings[b]);
    if (end.size() > static_cast<size_t>(window))
        throw Error((item.file.empty() ? "line " : item.file + ":") + std::to_string(item.line),
                    "ending " + std::to_string(b) + " has " + std::to_string(end.size()) +
                        " tokens, more than the model's context of " + std::to_string(window));
    return end;
}

}  // namespace

void check_endings_fit(const std::vector<HellaSwagItem>& items, const Tokenizer& tok, int window) {
    for (const HellaSwagItem& item : items)
        for (size_t b = 0; b < item.endings.size(); b++) ending_tokens(tok, item, static_cast<int>(b), window);
}

HellaSwagResult score_hellaswag_item(GPT& model, const Tokenizer& tok, const HellaSwagItem& item) {
    const int window = model.config().max_seq_len;
    if (tok.vocab_size() > static_cast<size_t>(model.config().vocab_size))
        throw Error("tokenizer", "has " + std::to_string(tok.vocab_size()) + " tokens, more than the model's vocabulary of " +
                                     std::to_string(model.config().vocab_size));
    const std::vector<uint32_t> ctx = tok.encode_ordinary(item.ctx);
    const int B = static_cast<int>(item.endings.size());
    std::vector<std::vector<uint32_t>> rows(B);
    std::vector<size_t> first(B);  // index in the row of the ending's first token
    size_t longest = 0;
    HellaSwagResult r;
    r.label = item.label;
    for (int b = 0; b < B; b++) {
        const std::vector<uint32_t> end = ending_tokens(tok, item, b, window);
        // Inputs are row[0..n-1), so a row of window + 1 tokens fills the context exactly.
        const size_t keep_ctx = std::min(ctx.size(), static_cast<size_t>(window) + 1 - end.size());
        rows[b].assign(ctx.end() - static_cast<long>(keep_ctx), ctx.end());
        rows[b].insert(rows[b].end(), end.begin(), end.end());
        first[b] = keep_ctx;
        longest = std::max(longest, rows[b].size());
    }
    const int T = static_cast<int>(std::max<size_t>(longest, 2) - 1);
    std::vector<int32_t> inputs(static_cast<size_t>(B) * T, 0);  // padding: causal attention never looks right
    for (int b = 0; b < B; b++)
        for (size_t t = 0; t + 1 < rows[b].size(); t++) inputs[static_cast<size_t>(b) * T + t] = static_cast<int32_t>(rows[b][t]);
    model.forward(inputs.data(), nullptr, B, T);
    const std::vector<float> logits = model.get_logits();  // [B*T, V]
    const size_t V = static_cast<size_t>(model.config().vocab_size);
    for (int b = 0; b < B; b++) {
        double sum = 0;
        // Position t predicts rows[b][t + 1]; an ending token at index i is predicted at i - 1.
        // A context cut to nothing leaves the ending's first token without a prediction.
        int scored = 0;
        for (size_t i = std::max<size_t>(first[b], 1); i < rows[b].size(); i++, scored++) {
            const float* z = logits.data() + (static_cast<size_t>(b) * T + (i - 1)) * V;
            double mx = z[0];
            for (size_t v = 1; v < V; v++) mx = std::max(mx, static_cast<double>(z[v]));
            double se = 0;
            for (size_t v = 0; v < V; v++) se += std::exp(static_cast<double>(z[v]) - mx);
            sum += mx + std::log(se) - z[rows[b][i]];
        }
        r.tokens.push_back(scored);
        r.sum_loss.push_back(sum);
        r.mean_loss.push_back(scored > 0 ? sum / scored : 0.0);
        if (sum < r.sum_loss[r.pred]) r.pred = b;
        if (r.mean_loss[b] < r.mean_loss[r.pred_norm]) r.pred_norm = b;
    }
    return r;
}

HellaSwagScore score_hellaswag(GPT& model, const Tokenizer& tok, const std::vector<HellaSwagItem>& items,
                               const std::function<void(size_t, const HellaSwagResult&)>& on_item) {
    HellaSwagScore s;
    for (size_t i = 0; i < items.size(); i++) {
        const HellaSwagResult r = score_hellaswag_item(model, tok, items[i]);
        s.items++;
        s.correct += r.pred == r.label;
        s.correct_norm += r.pred_norm == r.label;
        if (on_item) on_item(i, r);
    }
    return s;
}

}  // namespace sixnd
