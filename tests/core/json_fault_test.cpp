// A JSON fault in a message is the fault itself ("line 1, column 2: ..."), not nlohmann's
// exception class and number.
#include "core/json_fault.h"

#include <gtest/gtest.h>

#include <string>

using sixnd::json_fault;
using nlohmann::json;

namespace {

template <typename F> std::string fault_of(F&& f) {
    try {
        f();
    } catch (const json::exception& e) {
        return json_fault(e);
    }
    return "(no exception)";
}

}  // namespace

TEST(JsonFault, ASyntaxErrorIsItsPlaceAndReason) {
    EXPECT_EQ(fault_of([] { return json::parse("{x"); }),
              "line 1, column 2: syntax error while parsing object key - invalid literal; last read: '{x'; expected string literal");
    EXPECT_EQ(fault_of([] { return json::parse(""); }).rfind("line 1, column 1: syntax error", 0), 0u);
}

TEST(JsonFault, AMissingKeyOrAWrongTypeIsTheLibrarysSentence) {
    const json j = {{"step", "3"}};
    EXPECT_EQ(fault_of([&] { return j.at("seed"); }), "key 'seed' not found");
    EXPECT_EQ(fault_of([&] { return j.at("step").get<int>(); }), "type must be number, but is string");
}
