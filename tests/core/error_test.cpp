// excerpt(): a long input quoted in a message is cut, and never inside a UTF-8 character, whose
// stray half would reach the user as \xNN escapes of text that was valid.
#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

#include "core/printable.h"

using namespace sixnd;

TEST(Excerpt, ShortTextIsWhole) {
    EXPECT_EQ(excerpt("abc", 3), "abc");
    EXPECT_EQ(excerpt("abcd", 3), "abc...");
}

// "a" and then two-byte characters: 60 bytes end in the middle of the 30th.
TEST(Excerpt, ACutMovesBackToACharacterStart) {
    std::string text = "a";
    for (int i = 0; i < 40; i++) text += "\xC3\xA9";  // é
    const std::string cut = excerpt(text);
    EXPECT_EQ(cut, text.substr(0, 59) + "...");
    EXPECT_EQ(printable(cut), cut);
    // Four-byte characters (an emoji), cut one to three bytes into one.
    const std::string emoji = "\xF0\x9F\x98\x80";
    for (size_t into = 1; into < 4; into++) EXPECT_EQ(excerpt(emoji + emoji, 4 + into), emoji + "...") << into;
}

// Bytes that are not UTF-8 (continuation bytes in a row) are cut near the limit all the same.
TEST(Excerpt, TextThatIsNotUtf8IsCutNearTheLimit) {
    const std::string text(100, '\xA0');
    EXPECT_EQ(excerpt(text, 60), std::string(57, '\xA0') + "...");
}
