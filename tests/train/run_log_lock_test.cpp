// The run log is locked for the run: a second run on it is refused as "in use", and a file
// system that takes no locks is named as such, not taken for another run; a device is no one
// run's log and is not locked.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"
#include "tests/util/test_util.h"
#include "train/run_log.h"

using namespace sixnd;

namespace {
int flock_fails_with = 0;  // the next flock fails with this errno instead
}  // namespace

// This binary's flock stands in for the C library's, so that a test can make it fail.
extern "C" int flock(int fd, int op) {
    if (const int err = std::exchange(flock_fails_with, 0)) {
        errno = err;
        return -1;
    }
    return static_cast<int>(syscall(SYS_flock, fd, op));
}

namespace {

std::string error_of(const std::string& path) {
    try {
        RunLog log(path, RunLogOwner{});
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST(RunLogLock, ASecondRunIsRefusedAsInUse) {
    const test::TempDir d("sixnd-run-log-");
    const std::string path = d.dir + "/run.jsonl";
    RunLog first(path, RunLogOwner{});
    EXPECT_EQ(error_of(path), path + ": the run log is in use by another sixnd train; give each run its own --log");
}

TEST(RunLogLock, AFileSystemWithoutLocksIsNamedAsSuch) {
    const test::TempDir d("sixnd-run-log-");
    const std::string path = d.dir + "/run.jsonl";
    flock_fails_with = ENOLCK;
    EXPECT_EQ(error_of(path), path + ": cannot lock the run log (flock): " + std::strerror(ENOLCK));
}

// --log /dev/null (a script that keeps no log) in two runs at once: a device's lock would be
// every process's, and the second run was refused as "in use".
TEST(RunLogLock, TwoRunsMayBothLogToADevice) {
    RunLog first("/dev/null", RunLogOwner{});
    EXPECT_EQ(error_of("/dev/null"), "accepted");
    first.write({{"type", "header"}});
}
