// Text from a user's input quoted back in a message (a file name, a line, a parser's "last
// read"), made safe for a terminal line: valid UTF-8 is kept as it is, and every byte of an
// invalid sequence, every control character (newlines too: a message is one line), DEL and the
// C1 controls U+0080-U+009F (NEL breaks a line, CSI starts a terminal escape) become \xNN.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace sixnd {

// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0 when s[i] does not start one.
inline size_t utf8_sequence_length(std::string_view s, size_t i) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    if (n == 0 || i + n > s.size() || b(1) < lo || b(1) > hi) return 0;
    for (size_t k = 2; k < n; k++)
        if (b(k) < 0x80 || b(k) > 0xBF) return 0;
    return n;
}

inline std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = c >= 0x20 && c < 0x7F ? 1 : c >= 0x80 ? utf8_sequence_length(s, i) : 0;
        if (c == 0xC2 && n == 2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) n = 0;  // a C1 control
        if (n > 0) {
            out.append(s.substr(i, n));
            i += n;
            continue;
        }
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
        i++;
    }
    return out;
}

// Text for a JSON string (nlohmann refuses invalid UTF-8): valid UTF-8 kept, newlines and all,
// each byte of an invalid sequence (a character a token cut in half) replaced by U+FFFD.
inline std::string utf8_repaired(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        const size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8_sequence_length(s, i);
        if (n > 0) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out += "\xEF\xBF\xBD";
            i++;
        }
    }
    return out;
}

}  // namespace sixnd
