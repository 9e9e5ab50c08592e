#include "data/langid.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/doc_filter.h"

using namespace sixnd::data;

TEST(LangId, DetectsCommonLanguages) {
    auto en = detect_language("The committee will publish its report next week, after the members have read the draft.");
    EXPECT_EQ(language_code(en.lang), "en");
    EXPECT_GT(en.confidence, 0.9);
    auto de = detect_language("Der Ausschuss wird seinen Bericht nächste Woche veröffentlichen, nachdem die Mitglieder ihn gelesen haben.");
    EXPECT_EQ(language_code(de.lang), "de");
    auto un = detect_language("12345 67890");
    EXPECT_EQ(language_code(un.lang), "un");
    EXPECT_EQ(un.confidence, 1.0);
}

// "un" in --langs keeps the text CLD2 cannot name, under the default --min-lang-confidence too:
// CLD2 gives such text a share of 0%, which removed every one of it as low_confidence.
TEST(LangId, KeepsUnknownTextWhenAskedFor) {
    FilterConfig cfg;
    cfg.langs = parse_languages("en,un");
    cfg.min_lang_confidence = 0.65;
    std::string text = "12345 67890\n4711 0815";
    DocVerdict v;
    filter_document(text, cfg, v);
    EXPECT_EQ(v.fate, kKept) << v.reason;
}

TEST(LangId, ParsesCodesAndRejectsUnknownOnes) {
    auto v = parse_languages("en,de");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(language_code(v[1]), "de");
    try {
        parse_languages("en,xx");
        FAIL();
    } catch (const sixnd::Error& e) {
        EXPECT_EQ(e.where(), "--langs");
        EXPECT_NE(std::string(e.what()).find("'xx'"), std::string::npos);
    }
    EXPECT_THROW(parse_languages(""), sixnd::Error);
}

// "en,,de", "en," and "en,en" were read as en,de and en: a typo in the list passed unseen.
TEST(LangId, RefusesEmptyAndRepeatedCodes) {
    for (const char* bad : {"en,,de", "en,", ",en", "en,de,en"}) EXPECT_THROW(parse_languages(bad), sixnd::Error) << bad;
}
