#include "tokenizer/tokenizer_file.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/atomic_file.h"
#include "core/json_fault.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/pretokenizer.h"
#include "core/read_file.h"
#include "tokenizer/tokenizer.h"

namespace sixnd {
namespace {

using nlohmann::json;

const json& field(const json& doc, const char* key, json::value_t type, const std::string& path) {
    auto it = doc.find(key);
    SIXND_CHECK(it != doc.end(), path, std::string("missing field \"") + key + "\"");
    bool ok = it->type() == type || (type == json::value_t::number_unsigned && it->is_number_unsigned());
    SIXND_CHECK(ok, path, std::string("field \"") + key + "\" has the wrong type");
    return *it;
}

uint32_t as_id(const json& v, const std::string& path, const std::string& what) {
    SIXND_CHECK(v.is_number_unsigned() && v.get<uint64_t>() <= 0x7FFFFFFF, path, what + " is not a valid token id");
    return v.get<uint32_t>();
}

}  // namespace

TokenizerSpec read_tokenizer_file(const std::string& path, std::string* stored_hash) {
    json doc;
    try {
        doc = json::parse(read_whole_file(path));
    } catch (const json::parse_error& e) {
        throw Error(path, "not a sixnd tokenizer file (invalid JSON): " + json_fault(e));
    }
    // Other JSON may hold a "format" of any type (GPT-2's vocab.json maps the word to an id).
    const auto format = doc.find("format");
    SIXND_CHECK(format != doc.end() && *format == "sixnd-tokenizer", path,
                "not a sixnd tokenizer file (no \"format\": \"sixnd-tokenizer\")");
    const json& version = field(doc, "version", json::value_t::number_unsigned, path);
    SIXND_CHECK(version.get<uint64_t>() == kTokenizerFileVersion, path,
                "tokenizer file version " + version.dump() + " is not supported (this sixnd reads version " +
                    std::to_string(kTokenizerFileVersion) + ")");
    SIXND_CHECK(field(doc, "model", json::value_t::string, path) == "byte-level-bpe", path,
                "unsupported model " + doc["model"].dump());
    SIXND_CHECK(field(doc, "byte_encoding", json::value_t::string, path) == "gpt2-bytes-to-unicode", path,
                "unsupported byte_encoding " + doc["byte_encoding"].dump());

    // Optional, but a "hash" that is not a string is damage, not a hash left out.
    const std::string hash = doc.contains("hash") ? field(doc, "hash", json::value_t::string, path).get<std::string>() : "";
    if (stored_hash) *stored_hash = hash;
    TokenizerSpec spec;
    spec.pattern = field(doc, "pattern", json::value_t::string, path).get<std::string>();
    // The regex itself, as --pattern resolves it: a name there would compile as a regex matching
    // only that word, and every text would encode as one piece (a bare word is refused as such).
    SIXND_CHECK(resolve_pattern(spec.pattern, path) == spec.pattern, path,
                "\"pattern\" is \"" + spec.pattern + "\", a pattern's name: the file holds the regex itself " +
                    "(\"pattern_name\" holds the name)");
    const json& tokens = field(doc, "tokens", json::value_t::array, path);
    spec.tokens.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); i++) {
        std::string what = "tokens[" + std::to_string(i) + "]";
        SIXND_CHECK(tokens[i].is_string(), path, what + " is not a string");
        auto bytes = printable_to_bytes(tokens[i].get_ref<const std::string&>());
        SIXND_CHECK(bytes, path, what + " " + tokens[i].dump() + " has a character outside the byte table");
        spec.tokens.push_back(std::move(*bytes));
    }
    const json& vocab_size = field(doc, "vocab_size", json::value_t::number_unsigned, path);
    SIXND_CHECK(vocab_size.get<uint64_t>() == spec.tokens.size(), path,
                "vocab_size is " + vocab_size.dump() + " but there are " + std::to_string(spec.tokens.size()) +
                    " tokens");
    const json& merges = field(doc, "merges", json::value_t::array, path);
    spec.merges.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); r++) {
        std::string what = "merges[" + std::to_string(r) + "]";
        SIXND_CHECK(merges[r].is_array() && merges[r].size() == 2, path, what + " is not a pair of ids");
        spec.merges.emplace_back(as_id(merges[r][0], path, what), as_id(merges[r][1], path, what));
    }
    const json& specials = field(doc, "specials", json::value_t::array, path);
    for (size_t i = 0; i < specials.size(); i++) {
        std::string what = "specials[" + std::to_string(i) + "]";
        const json& s = specials[i];
        SIXND_CHECK(s.is_object() && s.contains("id") && s.contains("token") && s["token"].is_string(), path,
                    what + " is not {\"id\": N, \"token\": TEXT}");
        spec.specials.emplace_back(s["token"].get<std::string>(), as_id(s["id"], path, what + ".id"));
    }
    return spec;
}

std::string tokenizer_file_text(const TokenizerSpec& spec, const std::string& hash) {
    std::string out;
    out.reserve(spec.tokens.size() * 16 + spec.merges.size() * 16 + 1024);
    auto str = [](const std::string& s) { return json(s).dump(); };
    out += "{\n";
    out += "  \"format\": \"sixnd-tokenizer\",\n";
    out += "  \"version\": " + std::to_string(kTokenizerFileVersion) + ",\n";
    out += "  \"model\": \"byte-level-bpe\",\n";
    out += "  \"byte_encoding\": \"gpt2-bytes-to-unicode\",\n";
    out += "  \"pattern_name\": " + str(pattern_name(spec.pattern)) + ",\n";
    out += "  \"pattern\": " + str(spec.pattern) + ",\n";
    out += "  \"vocab_size\": " + std::to_string(spec.tokens.size()) + ",\n";
    out += "  \"hash\": " + str(hash) + ",\n";
    out += "  \"specials\": [";
    for (size_t i = 0; i < spec.specials.size(); i++)
        out += std::string(i ? ", " : "") + "{\"id\": " + std::to_string(spec.specials[i].second) +
               ", \"token\": " + str(spec.specials[i].first) + "}";
    out += "],\n  \"tokens\": [";
    for (size_t i = 0; i < spec.tokens.size(); i++)
        out += std::string(i ? ",\n    " : "\n    ") + str(bytes_to_printable(spec.tokens[i]));
    out += "\n  ],\n  \"merges\": [";
    for (size_t r = 0; r < spec.merges.size(); r++)
        out += std::string(r ? ",\n    [" : "\n    [") + std::to_string(spec.merges[r].first) + ", " +
               std::to_string(spec.merges[r].second) + "]";
    out += spec.merges.empty() ? "]\n}\n" : "\n  ]\n}\n";
    return out;
}

Tokenizer Tokenizer::load(const std::string& path) {
    std::string stored;
    Tokenizer t = from_spec(read_tokenizer_file(path, &stored), path);
    // A hand-written file may leave the hash out; a wrong one means an edit or damage.
    SIXND_CHECK(stored.empty() || stored == t.hash(), path,
                "content hash mismatch (file says " + stored + ", content is " + t.hash() +
                    "): the file was edited or damaged");
    return t;
}

void Tokenizer::save(const std::string& path) const { write_file_atomically(path, tokenizer_file_text(spec(), hash())); }

}  // namespace sixnd
