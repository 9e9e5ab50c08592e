// run_process's statuses, what it says on stderr when it cannot start the program as asked, and how
// ForwardSignals passes signals on.
#include "core/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "core/read_file.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

// run_process(argv, output) with this process's stderr going to a file: its status and what
// the child wrote there.
std::pair<int, std::string> run_capturing_stderr(const std::vector<std::string>& argv, const std::string& output,
                                                 const std::string& err_path) {
    const int saved = ::dup(2);
    const int fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
    const int rc = run_process(argv, output);
    ::dup2(saved, 2);
    ::close(saved);
    return {rc, read_whole_file(err_path)};
}

}  // namespace

TEST(RunProcess, ExitStatusAndSignal) {
    EXPECT_EQ(run_process({"sh", "-c", "exit 3"}), 3);
    EXPECT_EQ(run_process({"sh", "-c", "kill -9 $$"}), 128 + 9);
}

TEST(RunProcess, AMissingProgramIs127AndNamed) {
    const test::TempDir d("sixnd-subprocess-");
    const auto [rc, err] = run_capturing_stderr({"sixnd-no-such-program"}, "", d.dir + "/stderr");
    EXPECT_EQ(rc, 127);
    EXPECT_NE(err.find("sixnd-no-such-program"), std::string::npos) << err;
}

// The output file is opened in the child: a fault there must reach the user with the file named,
// not as a bare status.
TEST(RunProcess, AnOutputThatCannotBeOpenedIs126AndNamed) {
    const test::TempDir d("sixnd-subprocess-");
    const std::string output = d.dir + "/missing/run.log";
    const auto [rc, err] = run_capturing_stderr({"true"}, output, d.dir + "/stderr");
    EXPECT_EQ(rc, 126);
    EXPECT_NE(err.find(output), std::string::npos) << err;
    EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
}

namespace {

// fn() run with this process's descriptor fd closed, as a parent started with `>&-` or `<&-` is.
template <class F>
auto with_fd_closed(int fd, F fn) {
    const int saved = ::dup(fd);
    ::close(fd);
    auto r = fn();
    ::dup2(saved, fd);
    ::close(saved);
    return r;
}

}  // namespace

// The output file takes the lowest free descriptor, which is stdout's when the parent's is closed:
// the child must still find both of its streams in the file.
TEST(RunProcess, AParentWithStdoutClosedStillGivesTheChildBothStreams) {
    const test::TempDir d("sixnd-subprocess-");
    const std::string output = d.dir + "/run.log";
    const int rc = with_fd_closed(1, [&] { return run_process({"sh", "-c", "echo to-stdout; echo to-stderr >&2"}, output); });
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(read_whole_file(output), "to-stdout\nto-stderr\n");
}

// Forwarding children read /dev/null, whether or not the parent had a stdin to give them.
TEST(RunProcess, AParentWithStdinClosedGivesAForwardingChildDevNull) {
    const test::TempDir d("sixnd-subprocess-");
    const std::string output = d.dir + "/run.log";
    const ForwardSignals forwarding;
    const int rc = with_fd_closed(0, [&] { return run_process({"sh", "-c", "readlink /proc/$$/fd/0"}, output); });
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(read_whole_file(output), "/dev/null\n");
}

// A launcher child (mpirun ends its processes a second after passing SIGINT on) is sent each
// signal as the one it is told to pass on as it is; the caller still learns which one came.
TEST(RunProcess, ASignalIsPassedOnAsAsked) {
    const test::TempDir d("sixnd-subprocess-");
    const std::string ready = d.dir + "/ready", got = d.dir + "/got";
    const ForwardSignals forwarding(SIGUSR1);
    std::thread sender([&] {
        while (::access(ready.c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ::kill(::getpid(), SIGINT);
    });
    const int rc = run_process({"sh", "-c", "trap 'echo USR1 > " + got + "; exit 0' USR1; trap 'echo INT > " + got +
                                                "; exit 0' INT; touch " + ready + "; while :; do sleep 0.01; done"});
    sender.join();
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(read_whole_file(got), "USR1\n");
    EXPECT_EQ(ForwardSignals::received(), SIGINT);
}
