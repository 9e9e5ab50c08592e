// Token ids as text: both written forms read back, and every way a list can be cut short or
// garbled is an error at the right line and column rather than a shorter list.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/id_list.h"

using namespace sixnd;

namespace {

using Ids = std::vector<uint32_t>;

// "WHERE:LINE:COLUMN: fault" for text that must be refused.
std::string error_of(const std::string& text, size_t vocab = 100) {
    try {
        parse_id_list(text, "ids", vocab);
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

TEST(IdList, ReadsJsonArraysAndBareLists) {
    EXPECT_EQ(parse_id_list("[1, 2, 99]\n", "ids", 100), (Ids{1, 2, 99}));
    EXPECT_EQ(parse_id_list(" [\r\n 7 ,\t8 ]", "ids", 100), (Ids{7, 8}));
    EXPECT_EQ(parse_id_list("[]", "ids", 100), Ids{});
    EXPECT_EQ(parse_id_list("1 2,3 ,4\r\n5\n", "ids", 100), (Ids{1, 2, 3, 4, 5}));
}

TEST(IdList, CutOffArraysAreRefused) {
    EXPECT_EQ(error_of("[1, 2,"), "ids:1:7: the array is cut off after 2 ids: the input ends before its closing ']'");
    EXPECT_EQ(error_of("[1, 2"), "ids:1:6: the array is cut off after 2 ids: the input ends before its closing ']'");
    EXPECT_EQ(error_of("["), "ids:1:2: the array is cut off after 0 ids: the input ends before its closing ']'");
}

TEST(IdList, MalformedListsNameThePlace) {
    EXPECT_EQ(error_of("[1]]"), "ids:1:4: the array has ended, but ']' follows it");
    EXPECT_EQ(error_of("[1]\n2"), "ids:2:1: the array has ended, but '2' follows it");
    EXPECT_EQ(error_of("[1 2]"), "ids:1:4: expected ',' or ']' after 1 id, found '2'");
    EXPECT_EQ(error_of("[1,]"), "ids:1:4: expected a token id, found ']'");
    EXPECT_EQ(error_of("1,,2"), "ids:1:3: expected a token id, found ','");
    EXPECT_EQ(error_of("1 2,"), "ids:1:5: expected a token id, found the end of the input");
    EXPECT_EQ(error_of("1 2x"), "ids:1:4: expected ',' or a space after 2 ids, found 'x'");
    EXPECT_EQ(error_of("{\"ids\": [1]}"),
              "ids:1:1: expected token ids (a JSON array, or numbers separated by commas or spaces), found '{'");
    EXPECT_EQ(error_of(" \n "), "ids:2:2: holds no token ids (an empty list is written [])");
}

// Saved by an editor that starts files with a byte order mark: said so, not as "byte 0xef".
TEST(IdList, AByteOrderMarkIsNamed) {
    const std::string e = error_of("\xEF\xBB\xBF[1, 2]");
    EXPECT_EQ(e.rfind("ids:1:1: expected token ids", 0), 0u) << e;
    EXPECT_NE(e.find("a UTF-8 byte order mark"), std::string::npos) << e;
    EXPECT_EQ(error_of("\xEF[1]"), "ids:1:1: expected token ids (a JSON array, or numbers separated by commas or spaces), found byte 0xef");
}

TEST(IdList, OnlyIdsInTheVocabularyAreNumbers) {
    EXPECT_EQ(error_of("[1,\n -2]"), "ids:2:2: token id -2 is negative");
    // Ids are written as integers: JSON's 1e2 is 100, but no encoder writes it so.
    EXPECT_EQ(error_of("[1.0]"), "ids:1:2: token id 1.0 is not written as a whole number (digits only)");
    EXPECT_EQ(error_of("[1e2]"), "ids:1:2: token id 1e2 is not written as a whole number (digits only)");
    EXPECT_EQ(error_of("[+1]"), "ids:1:2: token id +1 is not written as a whole number (digits only)");
    EXPECT_EQ(error_of("[01]"), "ids:1:2: token id 01 has a leading zero, which JSON does not allow");
    EXPECT_EQ(error_of("7 007"), "ids:1:3: token id 007 has a leading zero, which JSON does not allow");
    EXPECT_EQ(parse_id_list("[0, 10]", "ids", 100), (Ids{0, 10}));
    EXPECT_EQ(error_of("[5, 100]"), "ids:1:5: token id 100 (id 2 of the list) is outside the vocabulary (size 100)");
    EXPECT_EQ(error_of("18446744073709551616123456789"),
              "ids:1:1: token id 184467440737095516161234... (id 1 of the list) is outside the vocabulary (size 100)");
    EXPECT_EQ(parse_id_list("[4294967294]", "ids", 4294967295u), Ids{4294967294u});
}

}  // namespace
