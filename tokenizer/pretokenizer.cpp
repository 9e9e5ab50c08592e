#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/printable.h"
#include "tokenizer/utf8.h"

namespace sixnd {
namespace {

const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* kGpt4 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Unicode's White_Space property: what \s means to Python's regex module (GPT-2's encoder.py)
// and Rust's regex (tiktoken). PCRE2's \s with UCP also takes U+180E MONGOLIAN VOWEL SEPARATOR
// (a format character since Unicode 6.3, \S to both references), so the published patterns are
// compiled with this class spelt out instead; the stored pattern text stays the published one.
// white_space() below is the same set.
const char* kWhiteSpace = R"(\t\n\x0B\f\r\x20\x85\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// The regex PCRE2 compiles for a pattern: the published ones with \s and \S as their references
// mean them, anything else as written (a custom pattern is a PCRE2 regex).
std::string engine_spelling(const std::string& regex) {
    if (regex != kGpt2 && regex != kGpt4) return regex;
    const std::string ws = kWhiteSpace;
    std::string s = regex;
    replace_all(s, "[^\\s", "[^" + ws);  // inside a class: [^\s\p{L}\p{N}]
    replace_all(s, "\\s", "[" + ws + "]");
    replace_all(s, "\\S", "[^" + ws + "]");
    return s;
}

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(code, buf, sizeof buf);
    return reinterpret_cast<const char*>(buf);
}

// One match-data block per thread, reused across calls: allocating it per call costs more
// than matching a short piece. Only the whole-match offsets are read.
pcre2_match_data* thread_match_data() {
    struct Holder {
        pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
        ~Holder() { pcre2_match_data_free(md); }
    };
    thread_local Holder h;
    return h.md;
}

}  // namespace

std::string resolve_pattern(const std::string& name_or_regex, const std::string& where) {
    if (name_or_regex == "gpt2") return kGpt2;
    if (name_or_regex == "gpt4" || name_or_regex == "cl100k") return kGpt4;
    const bool bare_word = !name_or_regex.empty() && std::all_of(name_or_regex.begin(), name_or_regex.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    SIXND_CHECK(!bare_word, where,
                "'" + name_or_regex + "' is no pattern name (gpt2, gpt4 or cl100k); a regex matching only that word would " +
                    "leave all other text unsplit (write it as (?:" + name_or_regex + ") if that is meant)");
    Pretokenizer(name_or_regex, where);
    return name_or_regex;
}

bool white_space(char32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool white_space_only(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        const size_t n = static_cast<unsigned char>(text[i]) < 0x80 ? 1 : utf8_sequence_length(text, i);
        if (n == 0 || !white_space(utf8_code_point(text, i, n))) return false;
        i += n;
    }
    return true;
}

std::string pattern_name(const std::string& regex) {
    if (regex == kGpt2) return "gpt2";
    if (regex == kGpt4) return "gpt4";
    return "custom";
}

struct Pretokenizer::Code {
    pcre2_code* code = nullptr;
    bool jit = false;
    ~Code() { pcre2_code_free(code); }
};

Pretokenizer::Pretokenizer(const std::string& regex, const std::string& where)
    : regex_(regex), code_(std::make_unique<Code>()) {
    SIXND_CHECK(!regex.empty(), where, "the pre-tokenizer pattern is empty");
    int err = 0;
    PCRE2_SIZE offset = 0;
    // MATCH_INVALID_UTF: arbitrary bytes are legal input; invalid sequences simply never match.
    const std::string spelt = engine_spelling(regex);
    code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(spelt.data()), spelt.size(),
                                PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &offset, nullptr);
    if (!code_->code)
        throw Error(where, "pattern does not compile at offset " + std::to_string(offset) + ": " +
                               pcre2_message(err));
    code_->jit = pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE) == 0;
}

Pretokenizer::~Pretokenizer() = default;

void Pretokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
    auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const size_t n = text.size();
    pcre2_match_data* md = thread_match_data();
    size_t pos = 0, covered = 0;
    while (pos < n) {
        int rc = code_->jit ? pcre2_jit_match(code_->code, subject, n, pos, 0, md, nullptr)
                            : pcre2_match(code_->code, subject, n, pos, 0, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) throw Error("pre-tokenizer", "regex match failed: " + pcre2_message(rc));
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        size_t begin = ov[0], end = ov[1];
        if (end == begin) {
            // An empty match would loop forever; step over one character and leave it to the gap.
            pos = begin + 1;
            while (pos < n && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) pos++;
            continue;
        }
        if (begin > covered) out.push_back(text.substr(covered, begin - covered));
        out.push_back(text.substr(begin, end - begin));
        pos = covered = end;
    }
    if (covered < n) out.push_back(text.substr(covered));
}

}  // namespace sixnd
