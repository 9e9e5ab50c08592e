// StopSignals (a training run's graceful stop) beside core's signal cleanup: a temporary file
// first armed while a run's handlers are installed (a checkpoint written during training) must
// not leave the cleanup's handlers uninstalled for the rest of the process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <filesystem>

#include "tests/util/first_arm.h"
#include "tests/util/test_util.h"
#include "train/stop_signal.h"

TEST(StopSignals, CleanupFirstArmedDuringARunWatchesAfterIt) {
    const sixnd::test::TempDir tmp("sixnd_stop_signal_");
    const std::filesystem::path file = std::filesystem::path(tmp.dir) / "out.tmp";
    const int status = sixnd::test::sigterm_after_first_arm_under<sixnd::StopSignals>(file, false, false);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
    EXPECT_FALSE(std::filesystem::exists(file)) << "a file armed after the run ended outlived a SIGTERM";
}
