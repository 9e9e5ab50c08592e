#include "tokenizer/vocab_json_reader.h"

#include "core/byte_order_mark.h"
#include "core/error.h"
#include "core/read_file.h"

namespace sixnd {
namespace {

class Parser {
public:
    Parser(std::string text, std::string path) : s_(std::move(text)), path_(std::move(path)) {}

    std::vector<VocabEntry> parse() {
        std::vector<VocabEntry> out;
        // As sixnd's other text readers do: a UTF-8 byte order mark is skipped, a wider one named.
        refuse_wide_text(s_, path_);
        pos_ = utf8_bom_size(s_);
        skip_space();
        expect('{', "the file must hold one JSON object");
        skip_space();
        if (peek() == '}') {
            pos_++;
        } else {
            for (;;) {
                skip_space();
                size_t line = line_;
                std::string key = string();
                skip_space();
                expect(':', "expected ':' after the token");
                skip_space();
                out.push_back({std::move(key), integer(), line});
                skip_space();
                if (peek() == ',') {
                    pos_++;
                    continue;
                }
                expect('}', "expected ',' or '}' after the id");
                break;
            }
        }
        skip_space();
        if (pos_ < s_.size()) fail("unexpected text after the object");
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& fault) const {
        throw Error(path_ + ":" + std::to_string(line_), fault);
    }
    int peek() const { return pos_ < s_.size() ? static_cast<unsigned char>(s_[pos_]) : -1; }
    void expect(char c, const char* fault) {
        if (peek() != c) fail(fault);
        pos_++;
    }
    void skip_space() {
        for (; pos_ < s_.size(); pos_++) {
            char c = s_[pos_];
            if (c == '\n') line_++;
            else if (c != ' ' && c != '\t' && c != '\r') break;
        }
    }

    uint64_t integer() {
        if (peek() == '-') fail("a token id is negative");
        if (peek() < '0' || peek() > '9') fail("expected a token id (a non-negative integer)");
        uint64_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(s_[pos_++] - '0');
            if (v > 0xFFFFFFFFull) fail("a token id is too large");
        }
        if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("a token id is not an integer");
        return v;
    }

    uint32_t hex4() {
        if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; i++) {
            char c = s_[pos_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
            else fail("bad \\u escape");
        }
        return v;
    }

    static void put_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string string() {
        expect('"', "expected a token in double quotes");
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) fail("unterminated string");
            char c = s_[pos_++];
            if (c == '"') return out;
            if (c == '\n') fail("unterminated string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) fail("unterminated string");
            char e = s_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00) {
                        if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
                            fail("unpaired surrogate in \\u escape");
                        pos_ += 2;
                        uint32_t lo = hex4();
                        if (lo < 0xDC00 || lo >= 0xE000) fail("unpaired surrogate in \\u escape");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp < 0xE000) {
                        fail("unpaired surrogate in \\u escape");
                    }
                    put_utf8(out, cp);
                    break;
                }
                default: fail(std::string("unknown escape \\") + e);
            }
        }
    }

    std::string s_;
    std::string path_;
    size_t pos_ = 0;
    size_t line_ = 1;
};

}  // namespace

std::vector<VocabEntry> read_vocab_json(const std::string& path) {
    return Parser(read_whole_file(path), path).parse();
}

}  // namespace sixnd
