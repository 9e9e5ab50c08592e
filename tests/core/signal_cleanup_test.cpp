// SignalCleanup in a child process: what is armed goes when SIGTERM ends the process (and the
// exit status still says SIGTERM), a path armed before it exists is removed once created, a
// disarmed path stays, and a handler the program installed itself is left in charge.
#include "core/signal_cleanup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include "core/signal_block.h"
#include "core/subprocess.h"
#include "tests/util/first_arm.h"
#include "tests/util/test_util.h"

namespace fs = std::filesystem;

namespace {

class SignalCleanupTest : public ::testing::Test {
protected:
    static int in_child(const std::function<void()>& body) { return sixnd::test::in_child(body); }

    static void touch(const fs::path& p) {
        std::FILE* f = std::fopen(p.c_str(), "w");
        if (!f) ::_exit(3);
        std::fputs("x", f);
        std::fclose(f);
    }

    const sixnd::test::TempDir tmp_{"sixnd_signal_cleanup_"};
    const fs::path dir_{tmp_.dir};
};

bool killed_by_sigterm(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM; }

TEST_F(SignalCleanupTest, ArmedFlatDirectoryGoesOnSigterm) {
    const fs::path partial = dir_ / "out.partial";
    int status = in_child([&] {
        sixnd::SignalCleanup c;
        // Armed before it exists: the order the owners use, so no moment leaves it unwatched.
        if (!c.arm(partial.string(), true)) ::_exit(2);
        fs::create_directory(partial);
        for (int i = 0; i < 300; i++) touch(partial / ("shard_" + std::to_string(i) + ".bin"));
        ::raise(SIGTERM);
        ::_exit(4);
    });
    EXPECT_TRUE(killed_by_sigterm(status)) << "status " << status;
    EXPECT_FALSE(fs::exists(partial));
}

// Armed for the first time in this process while a SignalBlock holds signals back: a SIGTERM that
// comes meanwhile is raised when the block ends and still removes the path. (Under ctest each
// case is its own process, so no earlier case has installed the handlers already.)
TEST_F(SignalCleanupTest, FirstArmedInsideASignalBlockIsStillWatched) {
    const fs::path file = dir_ / "out.tmp";
    int status = in_child([&] {
        sixnd::SignalCleanup c;
        {
            sixnd::SignalBlock block;
            if (!c.arm(file.string(), false)) ::_exit(2);
            touch(file);
            ::raise(SIGTERM);
        }
        ::_exit(4);
    });
    EXPECT_TRUE(killed_by_sigterm(status)) << "status " << status;
    EXPECT_FALSE(fs::exists(file));
}

// First armed while a ForwardSignals lives (sixnd ablate writes a run's DONE so), whose handler
// passes signals on instead: once it is gone, a path armed later is still removed by a SIGTERM.
TEST_F(SignalCleanupTest, FirstArmedWhileForwardingIsWatchedAfterwards) {
    const fs::path file = dir_ / "out.tmp";
    const int status = sixnd::test::sigterm_after_first_arm_under<sixnd::ForwardSignals>(file);
    EXPECT_TRUE(killed_by_sigterm(status)) << "status " << status;
    EXPECT_FALSE(fs::exists(file));
}

TEST_F(SignalCleanupTest, ArmedFileGoesAndOthersStay) {
    const fs::path temp = dir_ / "model.bin.tmp", kept = dir_ / "kept.tmp";
    int status = in_child([&] {
        sixnd::SignalCleanup a, b;
        if (!a.arm(temp.string(), false) || !b.arm(kept.string(), false)) ::_exit(2);
        touch(temp);
        touch(kept);
        b.disarm();
        ::raise(SIGTERM);
        ::_exit(4);
    });
    EXPECT_TRUE(killed_by_sigterm(status)) << "status " << status;
    EXPECT_FALSE(fs::exists(temp));
    EXPECT_TRUE(fs::exists(kept));
}

TEST_F(SignalCleanupTest, ProgramsOwnHandlerKeepsItsSignal) {
    const fs::path temp = dir_ / "graceful.tmp";
    int status = in_child([&] {
        std::signal(SIGTERM, [](int) { ::_exit(42); });
        sixnd::SignalCleanup c;
        if (!c.arm(temp.string(), false)) ::_exit(2);
        touch(temp);
        ::raise(SIGTERM);
        ::_exit(4);
    });
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 42);
    EXPECT_TRUE(fs::exists(temp));
}

}  // namespace
