#include "core/std_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace sixnd {

void occupy_closed_std_fds() {
    // In order, so that the lower slots are taken and open() lands on fd itself.
    for (int fd = 0; fd <= 2; fd++) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        if (::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY) < 0) return;  // no /dev/null: nothing to do
    }
}

}  // namespace sixnd
