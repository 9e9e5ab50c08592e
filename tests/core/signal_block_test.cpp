// SignalBlock in a child process: a SIGTERM sent inside the block ends the process only when the
// block ends (and as SIGTERM), and waits also when another thread takes it, which a thread's
// signal mask would not hold back; an ignored signal stays ignored, and a program's own handler still runs.
#include "core/signal_block.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <thread>

#include "tests/util/test_util.h"

namespace {

using sixnd::test::in_child;

bool killed_by_sigterm(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM; }

TEST(SignalBlock, SigtermInsideIsRaisedAtTheEnd) {
    const int status = in_child([] {
        sixnd::SignalBlock block;
        ::kill(::getpid(), SIGTERM);
        ::usleep(20000);
        ::_exit(7);  // reached: the signal waited
    });
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status;
    const int after = in_child([] {
        { sixnd::SignalBlock block; ::kill(::getpid(), SIGTERM); }
        ::_exit(8);  // not reached: the block's end raised it
    });
    EXPECT_TRUE(killed_by_sigterm(after)) << after;
}

TEST(SignalBlock, HoldsASignalAnotherThreadTakes) {
    const int status = in_child([] {
        // Started before the block, as an OpenMP worker is: it keeps the signal mask it began with.
        std::atomic<bool> go{false}, sent{false};
        std::thread worker([&] {
            while (!go) std::this_thread::yield();
            ::pthread_kill(::pthread_self(), SIGTERM);
            sent = true;
        });
        {
            sixnd::SignalBlock block;
            go = true;
            worker.join();
            ::usleep(20000);
            ::_exit(sent ? 7 : 3);  // reached: the signal waited
        }
    });
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << status;
}

TEST(SignalBlock, IgnoredStaysIgnored) {
    const int status = in_child([] {
        std::signal(SIGTERM, SIG_IGN);
        { sixnd::SignalBlock block; ::kill(::getpid(), SIGTERM); }
        ::_exit(5);
    });
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 5) << status;
}

// Under nohup SIGHUP is ignored: one that comes first must not take the place of a SIGTERM after it.
TEST(SignalBlock, AnIgnoredSignalDoesNotHideALaterOne) {
    const int status = in_child([] {
        std::signal(SIGHUP, SIG_IGN);
        {
            sixnd::SignalBlock block;
            ::kill(::getpid(), SIGHUP);
            ::kill(::getpid(), SIGTERM);
        }
        ::_exit(5);  // not reached: the block's end raised SIGTERM
    });
    EXPECT_TRUE(killed_by_sigterm(status)) << status;
}

volatile std::sig_atomic_t g_stop = 0;

TEST(SignalBlock, OwnHandlerRunsAtTheEnd) {
    const int status = in_child([] {
        std::signal(SIGINT, [](int) { g_stop = 1; });
        {
            sixnd::SignalBlock block;
            ::kill(::getpid(), SIGINT);
            if (g_stop) ::_exit(2);
        }
        ::_exit(g_stop ? 6 : 4);
    });
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 6) << status;
}

}  // namespace
