#include "tokenizer/gpt2_import.h"

#include <cstdio>
#include <unordered_map>

#include "tokenizer/flat_map.h"

#include "core/byte_order_mark.h"
#include "core/error.h"
#include "core/log.h"
#include "tokenizer/byte_unicode.h"
#include "core/read_file.h"
#include "tokenizer/vocab_json_reader.h"

namespace sixnd {
namespace {

std::string at(const std::string& path, size_t line) { return path + ":" + std::to_string(line); }

std::string count_of(size_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

// In byte-level BPE every token beyond the 256 bytes and the special tokens is made by a merge
// (by more than one when two merges spell the same bytes, so merges may outnumber such tokens,
// never fall short of them). A token no merge makes can never be produced: it is what a merges
// file cut short, or one from another vocabulary, leaves behind, and the importer would
// otherwise build a tokenizer that silently encodes worse than the original.
void check_every_token_made(const TokenizerSpec& spec, const std::vector<bool>& made, const std::string& merges_path,
                            const std::string& vocab_path) {
    std::vector<bool> special(made.size(), false);
    for (const auto& s : spec.specials)
        if (s.second < made.size()) special[s.second] = true;
    size_t needed = 0, unmade = 0, specials = 0;
    std::string examples;
    for (size_t id = 0; id < made.size(); id++) {
        if (special[id]) specials++;
        if (special[id] || spec.tokens[id].size() == 1) continue;
        needed++;
        if (made[id]) continue;
        // GPT-2's vocab.json lists <|endoftext|> among ordinary tokens: it is special only by
        // being named so, and naming others replaces it.
        const std::string& t = spec.tokens[id];
        if (t.size() > 4 && t.compare(0, 2, "<|") == 0 && t.compare(t.size() - 2, 2, "|>") == 0)
            throw Error(vocab_path, "token id " + std::to_string(id) + " \"" + t +
                                        "\" comes from no merge and is not named a special token; " +
                                        "name it too (--special replaces the default list, it does not add to it)");
        if (unmade++ >= 3) continue;
        if (!examples.empty()) examples += ", ";
        examples += "id " + std::to_string(id) + " \"" + bytes_to_printable(spec.tokens[id]) + "\"";
    }
    if (unmade == 0) return;
    const size_t merges = spec.merges.size();
    const std::string beyond = "beyond the 256 bytes and " + count_of(specials, "special token");
    const std::string unmade_list = " (" + examples + (unmade > 3 ? ", ..." : "") + ")";
    std::string fault = "has " + count_of(merges, "merge") + ", but ";
    if (merges < needed)
        fault += vocab_path + " needs at least " + std::to_string(needed) + " (one for each token " + beyond +
                 "): " + std::to_string(unmade) + " of its tokens come from no merge" + unmade_list +
                 "; is the file cut short?";
    else
        fault += count_of(unmade, "token") + " of " + vocab_path + (unmade == 1 ? " comes" : " come") + " from none" +
                 unmade_list + ", and every token " + beyond + " must come from a merge";
    throw Error(merges_path, fault);
}

// A special token must be text no ordinary token spells. Named after an entry of vocab.json that
// is a byte or that a merge makes, it would take that token from the merges that make and use
// it; with the bytes of another entry, text spelling them would always encode as the special.
// GPT-2's <|endoftext|> is neither: no merge makes it.
void check_specials_not_ordinary(const TokenizerSpec& spec, const std::unordered_map<std::string, uint32_t>& id_of,
                                 const std::vector<bool>& made, const std::string& vocab_path) {
    auto special = [&](uint32_t id) {
        for (const auto& s : spec.specials)
            if (s.second == id) return true;
        return false;
    };
    for (const auto& [text, id] : spec.specials) {
        const auto bytes = printable_to_bytes(text);
        const bool ordinary_entry = id < made.size() && (made[id] || (bytes && bytes->size() == 1));
        const auto twin = id_of.find(bytes_to_printable(text));
        if (!ordinary_entry && (twin == id_of.end() || special(twin->second))) continue;
        const uint32_t ordinary = ordinary_entry ? id : twin->second;
        throw Error("--special", "\"" + excerpt(text) + "\" is spelt like ordinary token id " + std::to_string(ordinary) +
                                     " \"" + excerpt(ordinary_entry ? text : twin->first) + "\" of " + vocab_path +
                                     "; a special token must be text no ordinary token spells");
    }
}

}  // namespace

Tokenizer import_gpt2(const std::string& vocab_path, const std::string& merges_path,
                      const std::vector<std::string>& specials, const std::string& pattern) {
    std::vector<VocabEntry> entries = read_vocab_json(vocab_path);
    SIXND_CHECK(!entries.empty(), vocab_path, "the vocabulary is empty");

    TokenizerSpec spec;
    spec.pattern = pattern;
    spec.tokens.resize(entries.size());
    std::vector<size_t> line_of(entries.size(), 0);
    std::unordered_map<std::string, uint32_t> id_of;  // by the written (printable) form
    for (const VocabEntry& e : entries) {
        SIXND_CHECK(e.id < entries.size(), at(vocab_path, e.line),
                    "id " + std::to_string(e.id) + " is out of range: ids must run 0.." +
                        std::to_string(entries.size() - 1) + " for " + std::to_string(entries.size()) + " tokens");
        SIXND_CHECK(line_of[e.id] == 0, at(vocab_path, e.line),
                    "id " + std::to_string(e.id) + " was already given on line " + std::to_string(line_of[e.id]));
        SIXND_CHECK(id_of.emplace(e.token, static_cast<uint32_t>(e.id)).second, at(vocab_path, e.line),
                    "token \"" + e.token + "\" appears twice");
        line_of[e.id] = e.line;
        auto bytes = printable_to_bytes(e.token);
        bool special = false;
        for (const auto& s : specials) special = special || s == e.token;
        if (special) {
            spec.tokens[e.id] = e.token;
            spec.specials.emplace_back(e.token, static_cast<uint32_t>(e.id));
        } else {
            SIXND_CHECK(bytes, at(vocab_path, e.line),
                        "token \"" + e.token + "\" has a character outside GPT-2's byte-to-unicode table");
            spec.tokens[e.id] = std::move(*bytes);
        }
    }
    // Byte-level BPE needs a token for every byte; name the first missing one in the file's own
    // spelling (GPT-2 writes bytes as printable characters, e.g. a space as "\u0120").
    for (int b = 0; b < 256; b++) {
        const std::string printable = bytes_to_printable(std::string(1, static_cast<char>(b)));
        if (id_of.count(printable)) continue;
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", b);
        throw Error(vocab_path, std::string("has no token for byte ") + hex + " (written \"" + printable +
                                    "\"); byte-level BPE needs all 256 bytes");
    }
    for (const auto& s : specials) {
        if (id_of.count(s)) continue;
        log_info("special token " + s + " is not in " + vocab_path + "; adding it as id " +
                 std::to_string(spec.tokens.size()));
        spec.specials.emplace_back(s, static_cast<uint32_t>(spec.tokens.size()));
        spec.tokens.push_back(s);
    }

    std::string text = read_whole_file(merges_path);
    refuse_wide_text(text, merges_path);  // and a UTF-8 byte order mark is skipped, as in vocab.json
    size_t line = 0;
    bpe::FlatMap<size_t> merge_line;
    std::vector<bool> made(entries.size(), false);  // by id: the result of some merge
    for (size_t pos = utf8_bom_size(text); pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string_view l(text.data() + pos, end - pos);
        pos = end + 1;
        line++;
        if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
        if (l.empty() || (line == 1 && l.substr(0, 8) == "#version")) continue;
        size_t space = l.find(' ');
        SIXND_CHECK(space != std::string_view::npos && space > 0 && space + 1 < l.size() &&
                        l.find(' ', space + 1) == std::string_view::npos,
                    at(merges_path, line), "expected two tokens separated by one space, got \"" + excerpt(l) + "\"");
        uint32_t ids[2];
        std::string_view parts[2] = {l.substr(0, space), l.substr(space + 1)};
        for (int k = 0; k < 2; k++) {
            auto it = id_of.find(std::string(parts[k]));
            SIXND_CHECK(it != id_of.end(), at(merges_path, line),
                        "token \"" + excerpt(parts[k]) + "\" is not in " + vocab_path);
            ids[k] = it->second;
        }
        std::string joined = std::string(parts[0]) + std::string(parts[1]);
        auto made_id = id_of.find(joined);
        SIXND_CHECK(made_id != id_of.end(), at(merges_path, line),
                    "the merged token \"" + joined + "\" is not in " + vocab_path);
        made[made_id->second] = true;
        size_t& first = merge_line.get(bpe::pair_key(ids[0], ids[1]));
        SIXND_CHECK(first == 0, at(merges_path, line), "this merge was already given on line " + std::to_string(first));
        first = line;
        spec.merges.emplace_back(ids[0], ids[1]);
    }
    check_specials_not_ordinary(spec, id_of, made, vocab_path);
    check_every_token_made(spec, made, merges_path, vocab_path);
    try {
        return Tokenizer::from_spec(std::move(spec), vocab_path);
    } catch (const Error& e) {
        // The file/line checks above catch what a damaged file usually gets wrong; what is left
        // (a missing byte, a merge listed twice) is about the pair of files as a whole.
        throw Error(vocab_path + " + " + merges_path, e.fault());
    }
}

}  // namespace sixnd
