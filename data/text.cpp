#include "data/text.h"

#include <utf8proc.h>
#include <xxhash.h>

namespace sixnd::data {

int32_t next_codepoint(std::string_view s, size_t& i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
        i++;
        return c;
    }
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                          static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {  // not reachable after ingest's repair; step over the byte rather than loop
        i++;
        return 0xFFFD;
    }
    i += static_cast<size_t>(n);
    return cp;
}

bool is_letter(int32_t cp) {
    if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    auto cat = utf8proc_category(cp);
    return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
}

bool is_punct_or_symbol(int32_t cp) {
    if (cp < 0x80) return cp > 0x20 && cp < 0x7F && !((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') && !(cp >= '0' && cp <= '9');
    auto cat = utf8proc_category(cp);
    return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_SO;
}

static bool is_word_char(int32_t cp) {
    if (cp < 0x80) return ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') || (cp >= '0' && cp <= '9');
    auto cat = utf8proc_category(cp);
    // Letters, combining marks (kept so that decomposed text stays one word) and numbers.
    return cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_NO;
}

void normalize_words(std::string_view text, NormWords& out) {
    out.text.clear();
    out.words.clear();
    out.text.reserve(text.size());
    bool in_word = false;
    size_t i = 0;
    while (i < text.size()) {
        int32_t cp = next_codepoint(text, i);
        if (!is_word_char(cp)) {
            if (in_word) out.words.back().second = static_cast<uint32_t>(out.text.size() - out.words.back().first);
            in_word = false;
            continue;
        }
        if (!in_word) {
            if (!out.text.empty()) out.text.push_back(' ');
            out.words.emplace_back(static_cast<uint32_t>(out.text.size()), 0);
            in_word = true;
        }
        if (cp < 0x80) {
            out.text.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
        } else {
            utf8proc_uint8_t buf[4];
            utf8proc_ssize_t n = utf8proc_encode_char(utf8proc_tolower(cp), buf);
            out.text.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
        }
    }
    if (in_word) out.words.back().second = static_cast<uint32_t>(out.text.size() - out.words.back().first);
}

uint64_t hash_bytes(std::string_view s, uint64_t seed) { return XXH3_64bits_withSeed(s.data(), s.size(), seed); }

}  // namespace sixnd::data
