#include "tokenizer/hf_export.h"

#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pretokenizer.h"

namespace sixnd {

std::string hf_tokenizer_json(const Tokenizer& tok) {
    using json = nlohmann::ordered_json;
    const TokenizerSpec& spec = tok.spec();
    auto byte_level = [](bool use_regex) {
        return json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
    };

    json added = json::array();
    std::vector<bool> special(spec.tokens.size(), false);
    for (const auto& [text, id] : spec.specials) {
        special[id] = true;
        added.push_back({{"id", id}, {"content", text}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", false}, {"special", true}});
    }
    // HF's ByteLevel pre-tokenizer has GPT-2's regex built in; any other pattern is given to a
    // Split step first, and ByteLevel then only maps bytes.
    json pre;
    if (pattern_name(spec.pattern) == "gpt2") {
        pre = byte_level(true);
    } else {
        pre = {{"type", "Sequence"},
               {"pretokenizers",
                json::array({json{{"type", "Split"},
                                  {"pattern", {{"Regex", spec.pattern}}},
                                  {"behavior", "Isolated"},
                                  {"invert", false}},
                             byte_level(false)})}};
    }
    // Appended directly: ordered_json's operator[] searches the keys linearly, which is
    // quadratic over 50K tokens. A special is written as its text and an ordinary token through
    // the byte table, so the two can meet (a special "Ġthe" beside a learned " the"); a key
    // given twice would load as only one of the tokens.
    json vocab = json::object();
    auto& entries = vocab.get_ref<json::object_t&>();
    entries.reserve(spec.tokens.size());
    std::unordered_map<std::string, uint32_t> id_of_key;
    id_of_key.reserve(spec.tokens.size());
    for (uint32_t id = 0; id < spec.tokens.size(); id++) {
        std::string key = special[id] ? spec.tokens[id] : bytes_to_printable(spec.tokens[id]);
        auto [it, fresh] = id_of_key.emplace(key, id);
        if (!fresh) {
            const uint32_t s = special[id] ? id : it->second, o = special[id] ? it->second : id;
            throw Error("tokenizer.json", "special token \"" + excerpt(key) + "\" (id " + std::to_string(s) +
                                              ") is how it writes ordinary token " + std::to_string(o) +
                                              "; its vocabulary cannot hold both (rename the special token)");
        }
        entries.emplace_back(std::move(key), id);
    }
    json merges = json::array();
    for (const auto& [a, b] : spec.merges)
        merges.push_back(bytes_to_printable(spec.tokens[a]) + " " + bytes_to_printable(spec.tokens[b]));

    // The fields of Hugging Face's own GPT-2 tokenizer.json, no more, so that old and new
    // versions of `tokenizers` both accept the file.
    json doc = {{"version", "1.0"},
                {"truncation", nullptr},
                {"padding", nullptr},
                {"added_tokens", added},
                {"normalizer", nullptr},
                {"pre_tokenizer", pre},
                {"post_processor", byte_level(true)},
                {"decoder", byte_level(true)},
                {"model",
                 {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", ""},
                  {"end_of_word_suffix", ""},
                  {"fuse_unk", false},
                  {"vocab", vocab},
                  {"merges", merges}}}};
    return doc.dump(1) + "\n";
}

std::string hf_tokenizer_config_json(const Tokenizer& tok, int model_max_length) {
    nlohmann::ordered_json doc = {{"add_prefix_space", false}};
    const bool gpt2_specials = tok.special_id("<|endoftext|>").has_value();
    if (gpt2_specials)
        for (const char* key : {"bos_token", "eos_token", "unk_token"}) doc[key] = "<|endoftext|>";
    doc["clean_up_tokenization_spaces"] = false;
    doc["model_max_length"] = model_max_length;
    doc["tokenizer_class"] = gpt2_specials ? "GPT2TokenizerFast" : "PreTrainedTokenizerFast";
    return doc.dump(2) + "\n";
}

bool hf_tokenizer_json_head(std::string_view head) {
    // The fields hf_tokenizer_json() writes first, as dump(1) spells them (the same in every
    // sixnd so far).
    constexpr std::string_view kHead = "{\n \"version\": \"1.0\",\n \"truncation\": null,\n \"padding\": null,\n";
    return head.substr(0, kHead.size()) == kHead;
}

void export_hf_tokenizer_json(const Tokenizer& tok, const std::string& path) {
    write_file_atomically(path, hf_tokenizer_json(tok));
}

}  // namespace sixnd
