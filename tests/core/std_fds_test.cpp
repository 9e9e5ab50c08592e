// With standard descriptors closed, the files a process opens must not land in their slots (a
// log line would be written into them), and the closed streams must still fail as closed ones do.
#include "core/std_fds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

using namespace sixnd;

namespace {

// The exit status of a child that closes `closed` of 0, 1, 2 (a bit each), calls
// occupy_closed_std_fds(), and then checks: 0 when all went as it should, else the check's number.
int child_with_closed(unsigned closed) {
    const pid_t pid = fork();
    if (pid == 0) {
        for (int fd = 0; fd <= 2; fd++)
            if (closed & (1u << fd)) ::close(fd);
        occupy_closed_std_fds();
        const int file = ::open("/dev/zero", O_RDONLY);
        if (file <= 2) _exit(1);
        char c = 'x';
        if (closed & 1u && (::read(0, &c, 1) != -1 || errno != EBADF)) _exit(2);
        if (closed & 2u && (::write(1, &c, 1) != -1 || errno != EBADF)) _exit(3);
        if (closed & 4u && (::write(2, &c, 1) != -1 || errno != EBADF)) _exit(4);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

}  // namespace

TEST(StdFds, ClosedSlotsAreTakenAndStillFailAsClosed) {
    for (unsigned closed = 1; closed < 8; closed++) EXPECT_EQ(child_with_closed(closed), 0) << "closed mask " << closed;
}

TEST(StdFds, OpenSlotsAreLeftAlone) {
    const int before = ::fcntl(1, F_GETFL);
    occupy_closed_std_fds();
    EXPECT_EQ(::fcntl(1, F_GETFL), before);
    const int file = ::open("/dev/zero", O_RDONLY);
    EXPECT_GT(file, 2);
    ::close(file);
}
