#include "data/mixing.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tests/util/test_util.h"

using namespace sixnd::data;

TEST(Mixing, ParsesSourceSpecs) {
    auto s = parse_source("web=/data/*.jsonl.gz:2.5");
    EXPECT_EQ(s.name, "web");
    EXPECT_EQ(s.pattern, "/data/*.jsonl.gz");
    EXPECT_DOUBLE_EQ(s.weight, 2.5);
    EXPECT_DOUBLE_EQ(parse_source("a=dir").weight, 1.0);
    EXPECT_EQ(parse_source("a=C:/odd:2").pattern, "C:/odd");  // a number after the last colon: a weight
    // Not a number after the last colon: part of the path when such files exist, else a bad weight.
    const sixnd::test::TempDir tmp("mixing");
    const std::string& dir = tmp.dir;
    std::ofstream(dir + "/odd:name") << "x";
    EXPECT_EQ(parse_source("a=" + dir + "/odd:name").pattern, dir + "/odd:name");
    try {
        parse_source("a=" + dir + "/*.txt:abc");
        ADD_FAILURE() << "a weight that is not a number was accepted";
    } catch (const sixnd::Error& e) {
        EXPECT_NE(std::string(e.what()).find("weight 'abc' of source 'a' is not a number"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_source("a=x:1e9"), sixnd::Error);  // beyond the bound on copies
    EXPECT_THROW(parse_source("noequals"), sixnd::Error);
    EXPECT_THROW(parse_source("=x"), sixnd::Error);
    EXPECT_THROW(parse_source("a b=x"), sixnd::Error);
    EXPECT_THROW(parse_source("a=x:-1"), sixnd::Error);
}

TEST(Mixing, CopiesAverageTheWeightAndRepeat) {
    for (double w : {0.0, 0.3, 1.0, 2.5}) {
        uint64_t total = 0;
        const int n = 20000;
        for (int i = 0; i < n; i++) {
            uint32_t c = mix_copies(w, 0x1234567ull * (i + 1), 42);
            EXPECT_TRUE(c == static_cast<uint32_t>(w) || c == static_cast<uint32_t>(w) + 1);
            total += c;
            EXPECT_EQ(c, mix_copies(w, 0x1234567ull * (i + 1), 42));
        }
        EXPECT_NEAR(static_cast<double>(total) / n, w, 0.02) << w;
    }
}
