#include "tokenizer/utf8.h"

#include "core/printable.h"

namespace sixnd {

std::string replace_invalid_utf8(std::string_view s) {
    static const char kReplacement[] = "\xEF\xBF\xBD";
    std::string out;
    out.reserve(s.size());
    const size_t n = s.size();
    auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    for (size_t i = 0; i < n;) {
        unsigned char c = byte(i);
        if (c < 0x80) {
            out += static_cast<char>(c);
            i++;
            continue;
        }
        // Expected length and the allowed range of the second byte (which rules out overlongs,
        // surrogates and code points past U+10FFFF).
        size_t len = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c == 0xE0) len = 3, lo = 0xA0;
        else if (c >= 0xE1 && c <= 0xEC) len = 3;
        else if (c == 0xED) len = 3, hi = 0x9F;
        else if (c >= 0xEE && c <= 0xEF) len = 3;
        else if (c == 0xF0) len = 4, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) len = 4;
        else if (c == 0xF4) len = 4, hi = 0x8F;
        size_t good = 1;  // bytes that still form a valid prefix
        if (len > 0) {
            for (; good < len && i + good < n; good++) {
                unsigned char b = byte(i + good);
                unsigned char l = good == 1 ? lo : 0x80, h = good == 1 ? hi : 0xBF;
                if (b < l || b > h) break;
            }
        }
        if (len > 0 && good == len) {
            out.append(s.substr(i, len));
        } else {
            out += kReplacement;
        }
        i += good;
    }
    return out;
}

char32_t utf8_code_point(std::string_view s, size_t i, size_t n) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    char32_t cp = n == 1 ? byte(0) : byte(0) & (0xFF >> (n + 1));
    for (size_t k = 1; k < n; k++) cp = (cp << 6) | (byte(k) & 0x3F);
    return cp;
}

bool valid_utf8(std::string_view bytes) {
    for (size_t i = 0; i < bytes.size();) {
        const size_t n = static_cast<unsigned char>(bytes[i]) < 0x80 ? 1 : utf8_sequence_length(bytes, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

}  // namespace sixnd
