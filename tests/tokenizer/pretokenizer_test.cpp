// Pre-tokenization and safe chunk cuts.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "tests/tokenizer/fixtures.h"
#include "tokenizer/chunk_reader.h"
#include "tokenizer/pretokenizer.h"

using namespace sixnd;

namespace {

std::vector<std::string> split(const std::string& pattern, const std::string& text) {
    Pretokenizer p(resolve_pattern(pattern), "test");
    std::vector<std::string_view> views;
    p.split(text, views);
    return {views.begin(), views.end()};
}

using V = std::vector<std::string>;

}  // namespace

TEST(Pretokenizer, Gpt2Pieces) {
    EXPECT_EQ(split("gpt2", "Hello world's 123 tests!!  \n\nok"),
              (V{"Hello", " world", "'s", " 123", " tests", "!!", "  \n", "\n", "ok"}));
    EXPECT_EQ(split("gpt2", "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87"), (V{"caf\xc3\xa9", " \xe4\xb8\xad\xe6\x96\x87"}));
    EXPECT_EQ(split("gpt2", ""), V{});
}

TEST(Pretokenizer, Gpt4PiecesSplitDigitsInThrees) {
    EXPECT_EQ(split("gpt4", "In 12345 DON'T\n\n"), (V{"In", " ", "123", "45", " DON", "'T", "\n\n"}));
}

// \s is Unicode's White_Space, as in GPT-2's encoder.py (Python regex) and tiktoken: U+180E
// MONGOLIAN VOWEL SEPARATOR is a format character there (\S), though PCRE2's own \s takes it.
TEST(Pretokenizer, MongolianVowelSeparatorIsNotWhitespace) {
    const std::string mvs = "\xe1\xa0\x8e";  // U+180E
    EXPECT_EQ(split("gpt2", " " + mvs + "'s"), (V{" " + mvs + "'", "s"}));
    EXPECT_EQ(split("gpt2", "\n\n" + mvs), (V{"\n", "\n", mvs}));
    EXPECT_EQ(split("gpt4", "a " + mvs + "b"), (V{"a", " " + mvs, "b"}));
    // NEL and the ideographic space stay whitespace; the C0 separators stay \S (not White_Space,
    // though Python's str.isspace() takes them).
    EXPECT_EQ(split("gpt2", "a\xc2\x85\xe3\x80\x80 b"), (V{"a", "\xc2\x85\xe3\x80\x80", " b"}));
    EXPECT_EQ(split("gpt2", "a\x1c\x1f" "b"), (V{"a", "\x1c\x1f", "b"}));
}

// Training refuses text of whitespace only, Unicode's as much as ASCII's.
TEST(Pretokenizer, WhiteSpaceOnlyIsUnicodesWhiteSpace) {
    EXPECT_TRUE(white_space_only(""));
    EXPECT_TRUE(white_space_only(" \t\r\n\x0b\x0c"));
    EXPECT_TRUE(white_space_only("\xc2\xa0\xe3\x80\x80\xe2\x80\xa8\xc2\x85"));  // NBSP, U+3000, U+2028, NEL
    EXPECT_FALSE(white_space_only("\xc2\xa0x"));
    EXPECT_FALSE(white_space_only("\xe1\xa0\x8e"));  // U+180E: a format character
    EXPECT_FALSE(white_space_only(" \xa0"));          // a lone byte, not NBSP
    EXPECT_FALSE(white_space_only("\xe3\x80"));      // U+3000 cut short
}

TEST(Pretokenizer, InvalidUtf8BecomesItsOwnPieces) {
    V pieces = split("gpt2", "ab\xff\xfe cd\xc3");
    std::string joined;
    for (const auto& p : pieces) joined += p;
    EXPECT_EQ(joined, "ab\xff\xfe cd\xc3");
    EXPECT_EQ(pieces.front(), "ab");
}

TEST(Pretokenizer, CustomPatternGapsAndEmptyMatchesAreCovered) {
    EXPECT_EQ(split("[a-z]+", "ab12cd"), (V{"ab", "12", "cd"}));
    EXPECT_EQ(split("x*", "abxxc"), (V{"ab", "xx", "c"}));
}

TEST(Pretokenizer, BadPatternIsAnError) {
    EXPECT_THROW(Pretokenizer("(unclosed", "--pattern"), Error);
}

TEST(Pretokenizer, BadPatternIsFoundWhenResolvedNamingTheFlag) {
    for (const char* regex : {"(", "(unclosed", "a\xff"}) {  // the last is not UTF-8
        try {
            resolve_pattern(regex);
            ADD_FAILURE() << regex << " was accepted";
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), "--pattern") << e.what();
            EXPECT_NE(std::string(e.what()).find("does not compile"), std::string::npos) << e.what();
        }
    }
}

TEST(Pretokenizer, BareWordIsAMisspeltNameNotARegex) {
    EXPECT_EQ(resolve_pattern("cl100k"), resolve_pattern("gpt4"));
    for (const char* word : {"gpt3", "GPT2", "gpt-2", "llama_3"}) {
        try {
            resolve_pattern(word);
            ADD_FAILURE() << word << " was taken as a regex";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("no pattern name"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("--pattern"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(resolve_pattern("(?:gpt3)"), "(?:gpt3)");
    EXPECT_EQ(resolve_pattern("\\w+"), "\\w+");
}

TEST(SafeCut, CutsDoNotChangePieces) {
    // Every safe cut in varied text splits it into two parts whose pieces, joined, are the
    // pieces of the whole.
    SIXND_NEED_FIXTURES();
    std::string text = sixnd::test::slurp(sixnd::test::tokenizer_fixtures() + "/tinystories_sample.txt");
    text += " x\n\n\ny  z.\n'tis 12 34\t\tq <|endoftext|> end";
    std::vector<std::pair<std::string, uint32_t>> specials = {{"<|endoftext|>", 0}, {"ty ", 1}};
    SpecialTokens sp(specials);
    for (const char* pattern : {"gpt2", "gpt4"}) {
        V whole = split(pattern, text);
        int cuts = 0;
        for (size_t end = text.size(); end > 2;) {
            size_t cut = last_safe_cut(std::string_view(text).substr(0, end), sp);
            if (cut == 0) break;
            for (const auto& m : sp.find_all(text)) EXPECT_FALSE(m.pos < cut && cut < m.pos + m.len) << "cut at " << cut;
            V left = split(pattern, text.substr(0, cut)), right = split(pattern, text.substr(cut));
            left.insert(left.end(), right.begin(), right.end());
            ASSERT_EQ(left, whole) << pattern << " cut at " << cut;
            end = cut;
            cuts++;
        }
        EXPECT_GT(cuts, 100);
    }
}

TEST(SafeCut, NeverInsideASpecialToken) {
    SpecialTokens sp({{"a b", 0}});
    EXPECT_EQ(last_safe_cut("xa b", sp), 0u);
    EXPECT_EQ(last_safe_cut("x bxa b", sp), 1u);
}

// Which specials encode() matches depends on every match before them: in "xyzw q" it matches
// "xyz" then "w q", so the space is inside a special token, though a search starting at "z"
// would match "zw" and see the space free.
TEST(SafeCut, MatchesSpecialTokensFromTheStartOfTheText) {
    SpecialTokens sp({{"xyz", 0}, {"zw", 1}, {"w q", 2}});
    const auto all = sp.find_all("xyzw q");
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[1].id, 2u);
    EXPECT_EQ(last_safe_cut("xyzw q", sp), 0u);
    EXPECT_EQ(last_safe_cut("a bxyzw q", sp), 1u);
    EXPECT_EQ(last_safe_cut("zw q", sp), 2u);
}

// The held-out tail of a training file starts at split_place(): never inside a special token
// (it would be trained on as text) and, where the text allows, at a safe cut.
TEST(SplitPlace, SafeCutOutsideSpecialTokens) {
    sixnd::test::TempDir tmp("split_place");
    const std::string path = tmp.dir + "/text.txt";
    std::string text;
    for (int i = 0; i < 50; i++) text += "hello world hello there <|endoftext|> the cat sat on the mat\n";
    sixnd::test::spit(path, text);
    SpecialTokens sp({{"<|endoftext|>", 0}});
    const auto all = sp.find_all(text);
    const V whole = split("gpt2", text);
    for (uint64_t at = 1; at < text.size(); at++) {
        const uint64_t cut = split_place(path, at, sp);
        ASSERT_LE(cut, at);
        for (const auto& m : all) ASSERT_FALSE(m.pos < cut && cut < m.pos + m.len) << "at " << at;
        if (at <= 5) continue;  // the first safe cut is at 5, "hello| world"
        EXPECT_GT(cut + 64, at) << "at " << at;
        V parts = split("gpt2", text.substr(0, cut)), right = split("gpt2", text.substr(cut));
        parts.insert(parts.end(), right.begin(), right.end());
        ASSERT_EQ(parts, whole) << "at " << at << ", cut " << cut;
    }
}

// Without a safe cut (CJK text has no ASCII spaces), the place still splits no character and no
// special token.
TEST(SplitPlace, WithoutSafeCutsSplitsNoCharacterOrSpecialToken) {
    sixnd::test::TempDir tmp("split_place");
    const std::string path = tmp.dir + "/text.txt";
    std::string text;
    for (int i = 0; i < 40; i++) text += "\xe6\x96\x87\xe5\xad\x97<|x|>\xe3\x80\x82";
    sixnd::test::spit(path, text);
    SpecialTokens sp({{"<|x|>", 0}});
    const auto all = sp.find_all(text);
    for (uint64_t at = 1; at < text.size(); at++) {
        const uint64_t cut = split_place(path, at, sp);
        ASSERT_LE(cut, at);
        EXPECT_NE(static_cast<unsigned char>(text[cut]) & 0xC0, 0x80) << "at " << at;
        for (const auto& m : all) ASSERT_FALSE(m.pos < cut && cut < m.pos + m.len) << "at " << at;
    }
}

// Past the first MiB only a window before `at` is read; its specials must still be matched as
// from the file's start. Here "xyz" starts one byte before the window, so from the window's start
// "zw" matches and " q" looks like a safe cut, though from the file's start "w q" covers it.
TEST(SplitPlace, WindowMatchesSpecialTokensFromTheStartOfTheFile) {
    sixnd::test::TempDir tmp("split_place");
    const std::string path = tmp.dir + "/text.txt";
    const size_t at = (size_t(1) << 20) + 1000, lo = at - (size_t(1) << 20);
    std::string text = std::string(lo - 1, '.') + "xyzw q" + std::string(at + 100 - lo - 5, '.');
    sixnd::test::spit(path, text);
    SpecialTokens sp({{"xyz", 0}, {"zw", 1}, {"w q", 2}});
    const uint64_t cut = split_place(path, at, sp);
    for (const auto& m : sp.find_all(text)) EXPECT_FALSE(m.pos < cut && cut < m.pos + m.len) << "cut " << cut;
}
