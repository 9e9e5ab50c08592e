// run_process's statuses, and what it says on stderr when it cannot start the program as asked.
#include "core/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

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
