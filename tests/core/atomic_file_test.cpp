// AtomicFile tidies up after writers of the same output killed with SIGKILL: their temporary
// files (NAME.tmp.PID.N) go when the process is gone, and nothing else beside the output does —
// not a living process's, not another output's, not a name that only looks alike (a number no
// pid can be included), not a directory. A write that fails says why.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/sibling_name.h"
#include "tests/util/test_util.h"

using namespace sixnd;
namespace fs = std::filesystem;

namespace {

// The pid of a process that has ended (a child, reaped): no process has it for now.
pid_t dead_pid() {
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, nullptr, 0);
    return pid;
}

void touch(const fs::path& p) { std::ofstream(p) << "left\n"; }

}  // namespace

TEST(AtomicFile, RemovesTemporariesOfKilledWritersOnly) {
    const sixnd::test::TempDir tmp("sixnd-atomic-");
    const fs::path dir(tmp.dir);
    const std::string dead = std::to_string(dead_pid()), alive = std::to_string(getppid());
    const std::string long_name(kNameMax, 'n');
    const fs::path gone[] = {dir / ("out.bin.tmp." + dead + ".0"), dir / ("out.bin.tmp." + dead + ".17"),
                             dir / sibling_name(long_name, ".tmp." + dead + ".2")};
    const fs::path kept[] = {dir / ("out.bin.tmp." + alive + ".0"), dir / ("other.bin.tmp." + dead + ".0"),
                             dir / ("out.bin.tmp." + dead), dir / "out.bin.tmp.notes", dir / ("out.bin.tmp." + dead + ".x"),
                             dir / "out.bin.tmp.20250101.0", dir / "out.bin.tmp.4194305.1"};  // no process has these
    for (const auto& p : gone) touch(p);
    for (const auto& p : kept) touch(p);
    const fs::path a_dir = dir / ("out.bin.tmp." + dead + ".5");
    fs::create_directory(a_dir);

    write_file_atomically((dir / "out.bin").string(), "new\n");
    write_file_atomically((dir / long_name).string(), "new\n");

    for (const auto& p : gone) EXPECT_FALSE(fs::exists(p)) << p;
    for (const auto& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
    EXPECT_TRUE(fs::is_directory(a_dir));
    EXPECT_TRUE(fs::exists(dir / "out.bin"));
}

// This binary's fclose stands in for the C library's, so a test can make the close itself fail
// as a network file system's does when a delayed write error or a quota surfaces there.
namespace {
int fclose_fails_with = 0;  // the next fclose closes the stream, then reports this errno
}  // namespace

extern "C" int fclose(FILE* f) {
    static const auto real = reinterpret_cast<int (*)(FILE*)>(dlsym(RTLD_NEXT, "fclose"));
    const int r = real(f);
    if (const int err = std::exchange(fclose_fails_with, 0)) {
        errno = err;
        return EOF;
    }
    return r;
}

// Only the close fails, after a flush and an fsync that succeeded: the message gives the
// close's reason, not whatever errno an earlier call left, and neither the output nor the
// temporary file is there.
TEST(AtomicFile, AFailingCloseIsReportedWithItsOwnReason) {
    const sixnd::test::TempDir tmp("sixnd-atomic-");
    const std::string out = tmp.dir + "/out.bin";
    AtomicFile f(out);
    f.write("data\n");
    errno = ENOENT;
    fclose_fails_with = EDQUOT;
    try {
        f.commit();
        FAIL() << "a failed close was committed";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), out);
        EXPECT_EQ(e.fault(), std::string("cannot finish writing: ") + std::strerror(EDQUOT));
    }
    EXPECT_TRUE(fs::is_empty(tmp.dir));
}

// An output whose directory is a file (a path that runs through one) is refused naming that
// file as what it is, not as a directory that does not exist, both before long work and when the
// output is created.
TEST(AtomicFile, ADirectoryThatIsAFileIsNamedAsOne) {
    const sixnd::test::TempDir tmp("sixnd-atomic-");
    const std::string file = tmp.dir + "/notes", out = file + "/out.bin";
    touch(file);
    const std::string fault = "cannot create the output: " + file + " is a regular file, not a directory";
    try {
        check_output_dir(out);
        FAIL() << "an output inside a file passed the check";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), out);
        EXPECT_EQ(e.fault(), fault);
    }
    try {
        AtomicFile f(out);
        FAIL() << "an output inside a file was created";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), out);
        EXPECT_EQ(e.fault(), fault);
    }
}

// An output in a directory that takes no new file fails the check made before long work, with
// the reason creating it would give. Root writes anywhere, so this runs only as another user.
TEST(AtomicFile, ADirectoryThatTakesNoFileFailsTheCheck) {
    if (::geteuid() == 0) GTEST_SKIP() << "running as root, which may write into any directory";
    const sixnd::test::TempDir tmp("sixnd-atomic-");
    const std::string dir = tmp.dir + "/ro", out = dir + "/out.bin";
    std::filesystem::create_directory(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    try {
        check_output_dir(out);
        ADD_FAILURE() << "an output in a read-only directory passed the check";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), out);
        EXPECT_EQ(e.fault(), "cannot create the output in " + dir + ": " + std::strerror(EACCES));
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    EXPECT_NO_THROW(check_output_dir(out));
}

// A write at an offset reaches the file only when the stream is moved back to the end (the seek
// flushes it): where that flush fails (here past the file size limit), the write has failed, and
// the file must not be committed without it. In a child, whose file size limit the test sets.
TEST(AtomicFile, AWriteAtAnOffsetThatCannotBeFlushedFails) {
    const sixnd::test::TempDir tmp("sixnd-atomic-");
    const std::string out = tmp.dir + "/out.bin";
    const pid_t pid = fork();
    if (pid == 0) {
        std::signal(SIGXFSZ, SIG_IGN);
        const rlimit limit{4096, 4096};
        setrlimit(RLIMIT_FSIZE, &limit);
        try {
            AtomicFile f(out);
            f.write(std::string(100, 'x'));
            f.write_at(8192, "header", 6);
            f.commit();
        } catch (const Error& e) {
            _exit(e.where() == out && std::string(e.fault()) == std::string("write failed: ") + std::strerror(EFBIG) ? 0 : 2);
        }
        _exit(1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: committed without the write; 2: another error";
    EXPECT_TRUE(fs::is_empty(tmp.dir));
}

// In a container every run may get the same pid: a temporary file of an earlier run of this pid,
// killed with SIGKILL, goes like any dead writer's (it used to be kept for its pid, a live one,
// and pile up run after run), while this process's own temporary files, found again when the
// directory is listed under another spelling, are kept.
TEST(AtomicFile, RemovesTemporariesOfAnEarlierProcessOfThisPid) {
    const sixnd::test::TempDir tmp("sixnd-atomic-");
    const fs::path dir(tmp.dir);
    // A count this process's writers do not reach, so that no name of theirs is the earlier one.
    const fs::path earlier = dir / ("out.bin.tmp." + std::to_string(getpid()) + ".1000000");
    touch(earlier);
    AtomicFile open_one((dir / "out.bin").string());
    open_one.write("first\n");
    write_file_atomically((dir / "." / "out.bin").string(), "second\n");
    EXPECT_FALSE(fs::exists(earlier));
    open_one.commit();
    EXPECT_EQ(read_whole_file((dir / "out.bin").string()), "first\n");
}
