// Pre-tokenization: the regex that cuts text into the pieces BPE works inside (merges never
// cross a piece boundary). PCRE2 with JIT and Unicode classes, as GPT-2's pattern needs \p{L}
// and \p{N}.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sixnd {

// "gpt2" and "gpt4" (cl100k) name the published patterns; anything else is taken as a regex,
// except a bare word (letters, digits, '_', '-'): that is a misspelt name far more often than a
// pre-tokenizer that matches one literal word, so it is an Error(where, ...) listing the names.
// A regex that does not compile is an Error(where, ...) too, found before any work.
std::string resolve_pattern(const std::string& name_or_regex, const std::string& where = "--pattern");
// "gpt2"/"gpt4" when the regex is one of the published ones, else "custom".
std::string pattern_name(const std::string& regex);
// Whether \s of the published patterns takes the code point (Unicode's White_Space).
bool white_space(char32_t cp);
// Whether text is nothing but such characters (a no-break or ideographic space as much as a
// newline); a byte of invalid UTF-8 is not one.
bool white_space_only(std::string_view text);

class Pretokenizer {
public:
    // Throws Error(where, ...) when the regex does not compile.
    Pretokenizer(const std::string& regex, const std::string& where);
    ~Pretokenizer();
    Pretokenizer(const Pretokenizer&) = delete;
    Pretokenizer& operator=(const Pretokenizer&) = delete;

    const std::string& regex() const { return regex_; }

    // Appends the pieces of text to out. The pieces cover every byte in order: bytes the regex
    // does not match (invalid UTF-8, or gaps a custom pattern leaves) become pieces of their
    // own, so byte-level encoding always round-trips. Thread-safe.
    void split(std::string_view text, std::vector<std::string_view>& out) const;

private:
    std::string regex_;
    struct Code;
    std::unique_ptr<Code> code_;
};

}  // namespace sixnd
