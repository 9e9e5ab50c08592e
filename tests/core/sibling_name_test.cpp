// Temporary siblings of outputs (core/sibling_name.h): short names get the suffix as they are;
// names near NAME_MAX are cut to make room, never inside a UTF-8 character, and a real file of
// that name can be written through AtomicFile.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/sibling_name.h"
#include "tests/util/test_util.h"

using namespace sixnd;

TEST(SiblingName, ShortNamesKeepTheirName) {
    EXPECT_EQ(sibling_name("train.bin", ".tmp.42.0"), "train.bin.tmp.42.0");
    EXPECT_EQ(sibling_path("a/b/out", ".partial-7"), "a/b/out.partial-7");
    EXPECT_EQ(sibling_path("out", ".old-7"), "out.old-7");
}

TEST(SiblingName, LongNamesAreCutToFit) {
    const std::string name(250, 'x');
    const std::string s = sibling_name(name, ".partial-1234567");
    EXPECT_EQ(s.size(), kNameMax);
    EXPECT_EQ(s, std::string(kNameMax - 16, 'x') + ".partial-1234567");
    EXPECT_EQ(sibling_path("/d/" + name, ".old-9"), "/d/" + std::string(kNameMax - 6, 'x') + ".old-9");
    EXPECT_EQ(sibling_name(std::string(kNameMax - 6, 'y'), ".old-9").size(), kNameMax);
}

TEST(SiblingName, CutsAtACharacterBoundary) {
    // "é" is two bytes; 126 of them are 252 bytes, and a 5-byte suffix leaves room for 250.
    std::string name;
    for (int i = 0; i < 126; i++) name += "\xc3\xa9";
    const std::string s = sibling_name(name, ".tmp1");
    EXPECT_EQ(s, name.substr(0, 250) + ".tmp1");
    const std::string odd = sibling_name(name, ".tmp12");  // room for 249 bytes: 124 whole characters
    EXPECT_EQ(odd, name.substr(0, 248) + ".tmp12");
}

TEST(SiblingName, AtomicFileWritesAName255BytesLong) {
    const sixnd::test::TempDir tmp("sixnd-sibling-");
    const std::string path = tmp.dir + "/" + std::string(kNameMax, 'n');
    write_file_atomically(path, "whole\n");
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "whole");
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp.dir)) entries += e.path() == path ? 1 : 100;
    EXPECT_EQ(entries, 1u) << "a temporary file was left beside the output";
}
