#include "core/digits.h"

#include <gtest/gtest.h>

namespace sixnd {
namespace {

TEST(AllDigits, OnlyAsciiDigitsAndAtLeastOne) {
    EXPECT_TRUE(all_digits("0"));
    EXPECT_TRUE(all_digits("000123"));
    EXPECT_FALSE(all_digits(""));
    EXPECT_FALSE(all_digits("12a"));
    EXPECT_FALSE(all_digits("-1"));
    EXPECT_FALSE(all_digits(" 1"));
    // U+0661 ARABIC-INDIC DIGIT ONE: a digit to Unicode, not a pid.
    EXPECT_FALSE(all_digits("\xd9\xa1"));
}

TEST(DigitsAfter, TheDigitsThatFollowTheLastTag) {
    EXPECT_EQ(digits_after("out.partial-123", ".partial-"), "123");
    EXPECT_EQ(digits_after("a.partial-1.partial-22", ".partial-"), "22");
    EXPECT_EQ(digits_after("out.partial-", ".partial-"), "");
    EXPECT_EQ(digits_after("out.partial-12x", ".partial-"), "");
    EXPECT_EQ(digits_after("out.partial-12.partial-x", ".partial-"), "");
    EXPECT_EQ(digits_after("out.old-7", ".partial-"), "");
}

}  // namespace
}  // namespace sixnd
