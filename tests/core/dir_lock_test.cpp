// DirLock's checks of --out before anything is written: each refusal names the path and its fault.
#include "core/dir_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "tests/util/test_util.h"

using namespace sixnd;

// A link to a directory that is not there is neither a directory nor absent: the message says so,
// rather than the "File exists" its creation fails with.
TEST(DirLock, ADanglingSymlinkIsNamedAsOne) {
    const test::TempDir d("sixnd-dirlock-");
    const std::string link = d.dir + "/run";
    ASSERT_EQ(::symlink("nowhere", link.c_str()), 0);
    try {
        DirLock lock(link, "--out", "sixnd train");
        FAIL() << "a dangling symlink was locked";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.where(), "--out");
        EXPECT_NE(what.find(link + " is a symbolic link to nowhere, which does not exist"), std::string::npos) << what;
    }
    EXPECT_FALSE(std::filesystem::exists(d.dir + "/nowhere"));
}
