// A log line is one line of valid UTF-8, whatever the message quotes (a file name with a newline
// or bytes that are not UTF-8, as a warning of a skipped file does): as main prints errors.
#include "core/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "core/read_file.h"
#include "tests/util/test_util.h"

using namespace sixnd;

TEST(Log, AMessageStaysOneLineOfValidUtf8) {
    const test::TempDir d("sixnd-log-");
    const std::string path = d.dir + "/stderr";
    const int saved = ::dup(2);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 2);
    ::close(fd);
    log_warn("cannot read in/a\nb\xff.txt, caf\xc3\xa9; file skipped");
    ::dup2(saved, 2);
    ::close(saved);
    EXPECT_EQ(read_whole_file(path), "[sixnd warn] cannot read in/a\\x0ab\\xff.txt, caf\xc3\xa9; file skipped\n");
}
