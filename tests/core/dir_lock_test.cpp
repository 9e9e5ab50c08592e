// DirLock's checks of --out before anything is written: each refusal names the path and its
// fault; and one holder at a time, however the holders' starts and ends interleave.
#include "core/dir_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "core/error.h"
#include "tests/util/test_util.h"

using namespace sixnd;

// The lock's system calls, seen from a test: this binary's flock, ftruncate and unlink stand in
// for the C library's, so a test can put another holder's exit (or a file system's refusal) at
// the exact point between two of DirLock's calls where it can happen, without timing anything.
namespace {
std::function<void()> before_flock;  // run once, at the next flock
int flock_fails_with = 0;            // the next flock fails with this errno instead
int ftruncate_fails_with = 0;        // the next ftruncate likewise
std::function<void()> after_unlink;  // run once, after the next unlink of a path ending so
std::string after_unlink_of;

void run_once(std::function<void()>& hook) {
    std::function<void()> h;
    std::swap(h, hook);
    if (h) h();
}
}  // namespace

extern "C" int flock(int fd, int op) {
    run_once(before_flock);
    if (const int err = std::exchange(flock_fails_with, 0)) {
        errno = err;
        return -1;
    }
    return static_cast<int>(syscall(SYS_flock, fd, op));
}

extern "C" int ftruncate(int fd, off_t length) {
    if (const int err = std::exchange(ftruncate_fails_with, 0)) {
        errno = err;
        return -1;
    }
    return static_cast<int>(syscall(SYS_ftruncate, fd, length));
}

extern "C" int unlink(const char* path) {
    const int r = static_cast<int>(syscall(SYS_unlinkat, AT_FDCWD, path, 0));
    const std::string p = path;
    if (!after_unlink_of.empty() && p.size() >= after_unlink_of.size() &&
        p.compare(p.size() - after_unlink_of.size(), after_unlink_of.size(), after_unlink_of) == 0) {
        after_unlink_of.clear();
        run_once(after_unlink);
    }
    return r;
}

namespace {

void expect_in_use(const std::string& dir) {
    try {
        DirLock again(dir, "--out", "sixnd train");
        FAIL() << "two processes hold " << dir;
    } catch (const Error& e) {
        const std::string in_use = " is in use by another sixnd train (pid " + std::to_string(getpid()) + ")";
        EXPECT_NE(std::string(e.what()).find(in_use), std::string::npos) << e.what();
    }
}

}  // namespace

// The holder that created the directory ends just after another process opened its .lock: the
// file and the directory go, and the flock that follows succeeds on a file no one else will
// open. The lock must be taken again on the directory as it now is, or a third process locks
// a fresh .lock beside it and two write one directory.
TEST(DirLock, AHolderEndingBeforeTheFlockLeavesOneHolder) {
    const test::TempDir d("sixnd-dirlock-");
    const std::string run = d.dir + "/a/run";
    auto first = std::make_unique<DirLock>(run, "--out", "sixnd train");
    before_flock = [&] { first.reset(); };
    const DirLock second(run, "--out", "sixnd train");
    EXPECT_FALSE(first);
    expect_in_use(run);
}

// The same holder ending just before the .lock is opened: the directory checked a moment ago is
// gone, and is made again rather than reported as missing.
TEST(DirLock, AHolderEndingBeforeTheOpenLeavesOneHolder) {
    const test::TempDir d("sixnd-dirlock-");
    const std::string run = d.dir + "/a/run";
    auto first = std::make_unique<DirLock>(run, "--out", "sixnd train");
    after_unlink_of = "/.write-probe-" + std::to_string(getpid());
    after_unlink = [&] { first.reset(); };
    const DirLock second(run, "--out", "sixnd train");
    EXPECT_FALSE(first);
    EXPECT_TRUE(std::filesystem::is_regular_file(run + "/.lock"));
    expect_in_use(run);
}

// Only EWOULDBLOCK means another holder: a file system without locks (NFS mounted without them)
// says so, naming the lock file.
TEST(DirLock, AFileSystemWithoutLocksIsNamedAsSuch) {
    const test::TempDir d("sixnd-dirlock-");
    // With a trailing slash too (the shell's completion adds one): the lock is DIR/.lock in the
    // message, not DIR//.lock.
    for (const std::string& run : {d.dir + "/run", d.dir + "/run/"}) {
        flock_fails_with = ENOLCK;
        try {
            DirLock lock(run, "--out", "sixnd train");
            FAIL() << "a refused flock was taken for a lock";
        } catch (const Error& e) {
            EXPECT_EQ(e.where(), "--out");
            EXPECT_EQ(e.fault(), d.dir + "/run/.lock: cannot lock (flock): " + std::strerror(ENOLCK));
        }
    }
}

// A holder caught between its flock and writing its pid: the message has no pid rather than
// "(pid another process)".
TEST(DirLock, AHolderWithoutItsPidYetIsNamedWithoutOne) {
    const test::TempDir d("sixnd-dirlock-");
    const std::string run = d.dir + "/run";
    std::filesystem::create_directory(run);
    const int fd = open((run + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    try {
        DirLock lock(run, "--out", "sixnd train");
        FAIL() << "a held lock was taken again";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), run + " is in use by another sixnd train; one directory takes one sixnd train at a time");
    }
    close(fd);
}

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

// Writing the holder's pid into the lock fails (a quota reached): the message names the lock
// file and the reason, and the directory made for the run does not stay behind holding it.
TEST(DirLock, AnUnwritableLockLeavesNothingBehind) {
    const test::TempDir d("sixnd-dirlock-");
    const std::string run = d.dir + "/a/run";
    ftruncate_fails_with = EDQUOT;
    try {
        DirLock lock(run, "--out", "sixnd train");
        FAIL() << "a lock without its pid was taken";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), "--out");
        EXPECT_EQ(e.fault(), run + "/.lock: cannot write the lock: " + std::strerror(EDQUOT));
    }
    EXPECT_TRUE(std::filesystem::is_empty(d.dir));
}

// A directory that takes no new files answers a create with ENOENT although it is there: that is
// its fault, said at once, not a directory gone while it was locked (which is tried again).
TEST(DirLock, ADirectoryThatTakesNoFilesIsNotWritable) {
    try {
        DirLock lock("/proc/self", "--out", "sixnd train");
        FAIL() << "/proc/self was locked";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), std::string("/proc/self is not writable: ") + std::strerror(ENOENT));
    }
}

// A write probe left by an earlier process of this pid, killed while it probed (in a container
// every run can have the same pid), is no fault of the directory: it is replaced, not reported
// as "not writable: File exists" on every run from then on.
TEST(DirLock, AProbeLeftByAKilledProcessOfThisPidIsReplaced) {
    const test::TempDir d("sixnd-dirlock-");
    const std::string probe = d.dir + "/.write-probe-" + std::to_string(getpid());
    const int left = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(left, 0);
    ::close(left);
    {
        const DirLock lock(d.dir, "--out", "sixnd train");
    }
    EXPECT_FALSE(std::filesystem::exists(probe));
}

// A path through "..": the directories made on the way ("new", which ".." then steps out of)
// are made by this lock too, and go with it when nothing was written; one that was there before
// keeps its place.
TEST(DirLock, DirectoriesMadeOnAPathThroughDotDotGoWithIt) {
    const test::TempDir d("sixnd-dirlock-");
    for (const std::string& run : {d.dir + "/new/../run", d.dir + "/run/.", d.dir + "/run/sub/.."}) {
        {
            const DirLock lock(run, "--out", "sixnd train");
            EXPECT_TRUE(std::filesystem::is_regular_file(d.dir + "/run/.lock")) << run;
        }
        EXPECT_TRUE(std::filesystem::is_empty(d.dir)) << run;
    }
    std::filesystem::create_directory(d.dir + "/run");
    { const DirLock lock(d.dir + "/a/b/./../../run/", "--out", "sixnd train"); }
    EXPECT_FALSE(std::filesystem::exists(d.dir + "/a"));
    EXPECT_TRUE(std::filesystem::is_directory(d.dir + "/run"));
}
