#include "tokenizer/id_list.h"

#include <cstdio>

#include "core/byte_order_mark.h"
#include "core/error.h"

namespace sixnd {
namespace {

// A byte for an error message: itself when printable, else its value (never a raw NUL or escape).
std::string describe_byte(char c) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
    char buf[24];
    std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
    return buf;
}

std::string count_ids(size_t n) { return std::to_string(n) + (n == 1 ? " id" : " ids"); }

class IdListParser {
public:
    IdListParser(std::string_view text, const std::string& where, size_t vocab_size)
        : s_(text), where_(where), vocab_size_(vocab_size) {}

    std::vector<uint32_t> parse() {
        skip_space();
        if (at_end()) fail("holds no token ids (an empty list is written [])");
        if (!is_digit(peek()) && peek() != '[' && peek() != '-')
            fail("expected token ids (a JSON array, or numbers separated by commas or spaces), found " + found());
        if (peek() == '[') {
            pos_++;
            array_ = true;
            skip_space();
            if (peek() == ']')
                pos_++;
            else
                array_items();
            skip_space();
            if (!at_end()) fail("the array has ended, but " + found() + " follows it");
        } else {
            bare_items();
        }
        return std::move(ids_);
    }

private:
    void array_items() {
        for (;;) {
            ids_.push_back(id());
            skip_space();
            if (at_end()) cut_off();
            if (peek() == ']') {
                pos_++;
                return;
            }
            if (peek() != ',') fail("expected ',' or ']' after " + count_ids(ids_.size()) + ", found " + found());
            pos_++;
            skip_space();
        }
    }

    void bare_items() {
        for (;;) {
            ids_.push_back(id());
            const size_t end_of_id = pos_;
            skip_space();
            if (at_end()) return;
            if (peek() == ',') {
                pos_++;
                skip_space();
            } else if (pos_ == end_of_id) {
                fail("expected ',' or a space after " + count_ids(ids_.size()) + ", found " + found());
            }
        }
    }

    uint32_t id() {
        if (at_end() && array_) cut_off();
        const size_t start = pos_;
        while (!at_end() && (is_digit(peek()) || peek() == '-' || peek() == '+' || peek() == '.' || peek() == 'e' ||
                             peek() == 'E'))
            pos_++;
        std::string_view literal = s_.substr(start, pos_ - start);
        if (literal.empty()) fail("expected a token id, found " + found());
        const std::string shown = excerpt(literal, 24);
        if (literal[0] == '-') fail_at(start, "token id " + shown + " is negative");
        uint64_t v = 0;
        if (literal.size() > 1 && literal[0] == '0')
            fail_at(start, "token id " + shown + " has a leading zero, which JSON does not allow");
        for (char c : literal) {
            if (!is_digit(c)) fail_at(start, "token id " + shown + " is not written as a whole number (digits only)");
            if (v < vocab_size_) v = v * 10 + static_cast<uint64_t>(c - '0');  // stops growing once too large
        }
        if (v >= vocab_size_)
            fail_at(start, "token id " + shown + " (id " + std::to_string(ids_.size() + 1) +
                               " of the list) is outside the vocabulary (size " + std::to_string(vocab_size_) + ")");
        return static_cast<uint32_t>(v);
    }

    [[noreturn]] void cut_off() const {
        fail("the array is cut off after " + count_ids(ids_.size()) + ": the input ends before its closing ']'");
    }
    [[noreturn]] void fail(const std::string& fault) const { fail_at(pos_, fault); }
    // Ids never span lines, so the current line is the line of any position in the id at hand.
    [[noreturn]] void fail_at(size_t pos, const std::string& fault) const {
        throw Error(where_ + ":" + std::to_string(line_) + ":" + std::to_string(pos - line_start_ + 1), fault);
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }
    bool at_end() const { return pos_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[pos_]; }
    std::string found() const {
        if (pos_ == 0 && utf8_bom_size(s_) > 0)
            return "a UTF-8 byte order mark (bytes ef bb bf, which some editors put first; save the ids without it)";
        return at_end() ? "the end of the input" : describe_byte(peek());
    }
    void skip_space() {
        for (; !at_end(); pos_++) {
            char c = s_[pos_];
            if (c == '\n') {
                line_++;
                line_start_ = pos_ + 1;
            } else if (c != ' ' && c != '\t' && c != '\r') {
                break;
            }
        }
    }

    std::string_view s_;
    std::string where_;
    size_t vocab_size_;
    bool array_ = false;
    size_t pos_ = 0;
    size_t line_ = 1;
    size_t line_start_ = 0;
    std::vector<uint32_t> ids_;
};

}  // namespace

std::vector<uint32_t> parse_id_list(std::string_view text, const std::string& where, size_t vocab_size) {
    return IdListParser(text, where, vocab_size).parse();
}

}  // namespace sixnd
