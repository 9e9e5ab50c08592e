// The ablation plan: --vary parsing, one-knob-at-a-time variants (the first value is the base's),
// directory names, which knobs are speed-only, and the errors for malformed specs.
#include <gtest/gtest.h>

#include "core/error.h"
#include "train/ablate.h"

namespace {

using sixnd::ablation_variants;
using sixnd::parse_vary;

TEST(AblatePlan, OneKnobAtATime) {
    const auto knobs = parse_vary({"recompute=none,selective,full", "--lr=1e-3,3e-3", "tokenizer=a/b.tok,c d.tok"});
    ASSERT_EQ(knobs.size(), 3u);
    EXPECT_EQ(knobs[1].name, "lr");
    const auto v = ablation_variants(knobs);
    ASSERT_EQ(v.size(), 1u + 2 + 1 + 1);
    EXPECT_EQ(v[0].name, "base");
    EXPECT_TRUE(v[0].knob.empty());
    EXPECT_EQ(v[1].name, "recompute=selective");
    EXPECT_TRUE(v[1].speed_only);
    EXPECT_EQ(v[2].value, "full");
    EXPECT_EQ(v[3].name, "lr=3e-3");
    EXPECT_FALSE(v[3].speed_only);
    EXPECT_EQ(v[4].value, "c d.tok");
    EXPECT_EQ(v[4].dir, "tokenizer=c_d.tok");  // no spaces or slashes in directory names
    EXPECT_TRUE(sixnd::speed_only_knob("attention"));
    EXPECT_TRUE(sixnd::speed_only_knob("zero"));
    EXPECT_FALSE(sixnd::speed_only_knob("dtype"));
}

TEST(AblatePlan, BadSpecs) {
    for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
             {}, {"lr"}, {"lr="}, {"=1,2"}, {"lr=1e-3"}, {"lr=1,,2"}, {"lr=1,1"}, {"lr=1,2", "lr=3,4"},
             {"seed=1,2"}, {"out=a,b"}, {"log=a,b"}, {"resume=a,b"}, {"check=a,b"}, {"help=1,2"}, {"--h=1,2"},
             {"data=a,x/y,x_y"}})
        EXPECT_THROW(ablation_variants(parse_vary(bad)), sixnd::Error) << (bad.empty() ? "" : bad[0]);
}

}  // namespace
