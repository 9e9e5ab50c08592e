// Building a tokenizer from its spec: validation, lookup tables and the content hash.
#include <atomic>
#include <cstdio>
#include <unordered_map>

#include <xxhash.h>

#include "core/error.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace sixnd {
namespace {

std::atomic<uint64_t> g_next_serial{1};

std::string show(std::string_view bytes) {
    std::string out;
    for (unsigned char c : bytes) {
        if (c >= 0x20 && c < 0x7F && c != '\\') {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    return "'" + out + "'";
}

// Over a canonical serialisation, so two files that differ only in layout hash alike.
std::string content_hash(const TokenizerSpec& spec) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    auto put_u32 = [&](uint32_t v) { XXH3_128bits_update(st, &v, sizeof v); };
    auto put_str = [&](std::string_view s) {
        put_u32(static_cast<uint32_t>(s.size()));
        XXH3_128bits_update(st, s.data(), s.size());
    };
    put_str("sixnd-tokenizer/1");
    put_str(spec.pattern);
    put_u32(static_cast<uint32_t>(spec.tokens.size()));
    for (const auto& t : spec.tokens) put_str(t);
    put_u32(static_cast<uint32_t>(spec.merges.size()));
    for (const auto& m : spec.merges) put_u32(m.first), put_u32(m.second);
    put_u32(static_cast<uint32_t>(spec.specials.size()));
    for (const auto& s : spec.specials) put_str(s.first), put_u32(s.second);
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                  static_cast<unsigned long long>(h.low64));
    return buf;
}

}  // namespace

Tokenizer::Impl::Impl(TokenizerSpec s, const std::string& where)
    : spec(std::move(s)),
      pretokenizer(spec.pattern, where),
      merges(spec.merges.size()),
      serial(g_next_serial.fetch_add(1)) {
    const size_t n = spec.tokens.size();
    SIXND_CHECK(n <= 0x7FFFFFFF, where, "the vocabulary is too large");
    std::vector<bool> is_special(n, false);
    std::unordered_map<std::string_view, uint32_t> special_ids;
    for (const auto& [text, id] : spec.specials) {
        SIXND_CHECK(!text.empty(), where, "a special token is empty");
        // The tokenizer file and tokenizer.json hold a special's text as JSON text.
        SIXND_CHECK(valid_utf8(text), where, "special token " + show(text) + " is not valid UTF-8");
        SIXND_CHECK(id < n, where,
                    "special token " + show(text) + " has id " + std::to_string(id) + ", outside the vocabulary");
        SIXND_CHECK(!is_special[id], where, "two special tokens share id " + std::to_string(id));
        SIXND_CHECK(special_ids.emplace(text, id).second, where, "special token " + show(text) + " is listed twice");
        SIXND_CHECK(spec.tokens[id] == text, where,
                    "special token " + show(text) + " has id " + std::to_string(id) + " but that id's bytes are " +
                        show(spec.tokens[id]));
        is_special[id] = true;
    }
    specials = SpecialTokens(spec.specials);

    std::unordered_map<std::string_view, uint32_t> ids;
    ids.reserve(n * 2);
    byte_ids.fill(~uint32_t(0));
    for (uint32_t id = 0; id < n; id++) {
        if (is_special[id]) continue;
        const std::string& t = spec.tokens[id];
        SIXND_CHECK(!t.empty(), where, "token " + std::to_string(id) + " is empty");
        auto [it, fresh] = ids.emplace(t, id);
        SIXND_CHECK(fresh, where,
                    "tokens " + std::to_string(it->second) + " and " + std::to_string(id) + " are both " + show(t));
        if (t.size() == 1) byte_ids[static_cast<unsigned char>(t[0])] = id;
    }
    for (int b = 0; b < 256; b++)
        SIXND_CHECK(byte_ids[b] != ~uint32_t(0), where,
                    "byte " + show(std::string(1, static_cast<char>(b))) + " has no token (byte-level BPE needs all 256)");
    // Text spelling such a special always encodes as the special, so the ordinary token it shadows
    // (and every merge through it) could never be produced.
    for (const auto& [text, id] : spec.specials) {
        auto it = ids.find(text);
        SIXND_CHECK(it == ids.end(), where,
                    "special token " + show(text) + " (id " + std::to_string(id) + ") is spelt like ordinary token " +
                        std::to_string(it->second) + "; a special token must be text no ordinary token spells");
    }

    for (size_t r = 0; r < spec.merges.size(); r++) {
        auto [a, b] = spec.merges[r];
        std::string what = "merge " + std::to_string(r) + " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
        SIXND_CHECK(a < n && b < n, where, what + " refers to a token outside the vocabulary");
        SIXND_CHECK(!is_special[a] && !is_special[b], where, what + " merges a special token");
        std::string joined = spec.tokens[a] + spec.tokens[b];
        auto it = ids.find(joined);
        SIXND_CHECK(it != ids.end(), where, what + ": the merged token " + show(joined) + " is not in the vocabulary");
        SIXND_CHECK(merges.add(a, b, bpe::Merge{static_cast<uint32_t>(r), it->second}), where, what + " is listed twice");
    }
    hash = content_hash(spec);
}

Tokenizer Tokenizer::from_spec(TokenizerSpec spec, const std::string& where) {
    return Tokenizer(std::make_shared<const Impl>(std::move(spec), where));
}

}  // namespace sixnd
