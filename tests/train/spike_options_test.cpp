// --inject-lr-spike STEP:FACTOR[:STEPS] as written: two or three parts, each a whole number, and
// nothing else; a part left empty is refused, not read as its default.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "train/spike_options.h"

namespace sixnd {
namespace {

TEST(SpikeOptions, LrInjectionParts) {
    const LrInjection two = parse_lr_injection("200:30");
    EXPECT_EQ(two.step, 200);
    EXPECT_DOUBLE_EQ(two.factor, 30);
    EXPECT_EQ(two.steps, 1);
    const LrInjection three = parse_lr_injection("200:30:5");
    EXPECT_EQ(three.steps, 5);
    EXPECT_EQ(lr_injection_text(three), "200:30:5");
}

// The run's resolved config records the factor the run multiplies by, every digit of it.
TEST(SpikeOptions, LrInjectionTextKeepsTheFactorAsGiven) {
    for (const char* spec : {"200:1.23456789:5", "7:0.1:1", "3:1e-07:2", "9:123456789012:1"})
        EXPECT_EQ(lr_injection_text(parse_lr_injection(spec)), spec);
}

TEST(SpikeOptions, LrInjectionWithAnEmptyPartIsRefused) {
    for (const char* spec : {"200:30:", "200:30:5:", ":200:30", "200::5", "200:", ""}) {
        try {
            parse_lr_injection(spec);
            ADD_FAILURE() << "accepted '" << spec << "'";
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), "--inject-lr-spike");
            EXPECT_NE(std::string(e.what()).find("STEP:FACTOR[:STEPS]"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
}  // namespace sixnd
