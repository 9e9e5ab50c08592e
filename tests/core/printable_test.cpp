#include "core/printable.h"

#include <gtest/gtest.h>

namespace sixnd {

TEST(Printable, KeepsAsciiAndValidUtf8) {
    EXPECT_EQ(printable("plain: 'x' 42"), "plain: 'x' 42");
    EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST(Printable, EscapesInvalidSequencesAndControls) {
    EXPECT_EQ(printable("caf\xe9.txt"), "caf\\xe9.txt");              // Latin-1
    EXPECT_EQ(printable("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");        // one line, no controls
    EXPECT_EQ(printable(std::string("nul\0!", 5)), "nul\\x00!");
    EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                   // overlong '/'
    EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");          // a surrogate
    EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
    EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");                   // cut short at the end
    EXPECT_EQ(printable("\xe2\x82x"), "\\xe2\\x82x");                 // cut short before ASCII
    EXPECT_EQ(printable("\xff\xc3\xa9"), "\\xff\xc3\xa9");            // a stray byte, then valid
}

// U+0080-U+009F are control characters too (Unicode category Cc), though valid UTF-8: NEL
// (U+0085) breaks the line, CSI (U+009B) opens an escape sequence in a terminal that takes C1.
TEST(Printable, EscapesC1Controls) {
    EXPECT_EQ(printable("a\xc2\x85" "b"), "a\\xc2\\x85b");
    EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\xc2\\x9b31m");
    EXPECT_EQ(printable("\xc2\x80\xc2\x9f"), "\\xc2\\x80\\xc2\\x9f");
    EXPECT_EQ(printable("\xc2\xa0\xc2\xa9"), "\xc2\xa0\xc2\xa9");  // NBSP and the copyright sign are text
}

}  // namespace sixnd
