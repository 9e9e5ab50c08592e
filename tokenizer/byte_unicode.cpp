#include "tokenizer/byte_unicode.h"

#include <array>
#include <cstdint>

namespace sixnd {
namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls, space, DEL, NBSP,
// soft hyphen) are moved, in byte order, to U+0100 onwards.
struct Table {
    std::array<uint16_t, 256> to_code{};
    std::array<int16_t, 512> to_byte{};
    Table() {
        to_byte.fill(-1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            to_code[b] = static_cast<uint16_t>(printable ? b : next++);
            to_byte[to_code[b]] = static_cast<int16_t>(b);
        }
    }
};

const Table& table() {
    static const Table t;
    return t;
}

}  // namespace

std::string bytes_to_printable(std::string_view bytes) {
    const Table& t = table();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) {
        uint16_t c = t.to_code[b];
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            out += static_cast<char>(0xC0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3F));
        }
    }
    return out;
}

std::optional<std::string> printable_to_bytes(std::string_view text) {
    const Table& t = table();
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        unsigned char c0 = static_cast<unsigned char>(text[i]);
        uint32_t code;
        if (c0 < 0x80) {
            code = c0;
            i += 1;
        } else if ((c0 & 0xE0) == 0xC0 && i + 1 < text.size() &&
                   (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
            code = ((c0 & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
            i += 2;
            if (code < 0x80) return std::nullopt;  // overlong
        } else {
            return std::nullopt;  // every table character is below U+0800
        }
        if (code >= t.to_byte.size() || t.to_byte[code] < 0) return std::nullopt;
        out += static_cast<char>(t.to_byte[code]);
    }
    return out;
}

}  // namespace sixnd
