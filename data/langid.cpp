#include "data/langid.h"

#include <cld2/public/compact_lang_det.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "core/error.h"

// Declared in CLD2's internal lang_script.h, which is not installed with the public header.
namespace CLD2 {
const char* LanguageCode(Language lang);
Language GetLanguageFromName(const char* src);
}  // namespace CLD2

namespace sixnd::data {

LangGuess detect_language(std::string_view text) {
    // CLD2 reaches its verdict within the first few KB; scanning megabytes would only cost time.
    constexpr size_t kMaxBytes = 64 * 1024;
    size_t n = text.size();
    if (n > kMaxBytes) {
        n = kMaxBytes;
        while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) n--;  // whole code points
    }
    CLD2::Language lang3[3];
    int percent3[3];
    double score3[3];
    int text_bytes = 0;
    bool reliable = false;
    CLD2::ExtDetectLanguageSummary(text.data(), static_cast<int>(n), true, nullptr, 0, lang3, percent3, score3,
                                   nullptr, &text_bytes, &reliable);
    if (lang3[0] != CLD2::UNKNOWN_LANGUAGE) return {static_cast<int>(lang3[0]), percent3[0] / 100.0};
    // CLD2 gives the text it cannot name no share (0%): unknown text's share is what no language
    // took, so that --langs un meets --min-lang-confidence as a language does.
    int named = 0;
    for (int i = 0; i < 3; i++) named += lang3[i] == CLD2::UNKNOWN_LANGUAGE ? 0 : percent3[i];
    return {static_cast<int>(lang3[0]), std::max(0, 100 - named) / 100.0};
}

std::string language_code(int lang) { return CLD2::LanguageCode(static_cast<CLD2::Language>(lang)); }

std::vector<int> parse_languages(const std::string& list) {
    std::vector<int> out;
    std::stringstream ss(list);
    std::string code;
    while (std::getline(ss, code, ',')) {
        if (code.empty()) throw Error("--langs", "empty item in '" + list + "': expected codes such as en,de");
        CLD2::Language l = CLD2::GetLanguageFromName(code.c_str());
        bool unknown_ok = code == "un" || code == "xxx";
        if (l == CLD2::UNKNOWN_LANGUAGE && !unknown_ok)
            throw Error("--langs", "unknown language code '" + code + "' (CLD2 codes such as en, de, fr, zh)");
        if (std::find(out.begin(), out.end(), static_cast<int>(l)) != out.end())
            throw Error("--langs", "'" + code + "' is given twice in '" + list + "'");
        out.push_back(static_cast<int>(l));
    }
    if (!list.empty() && list.back() == ',') throw Error("--langs", "empty item in '" + list + "': expected codes such as en,de");
    if (out.empty()) throw Error("--langs", "no language codes given");
    return out;
}

}  // namespace sixnd::data
