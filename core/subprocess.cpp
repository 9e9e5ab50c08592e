#include "core/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace sixnd {

int run_process(const std::vector<std::string>& argv, const std::string& output) {
    if (argv.empty()) throw Error("run_process", "no program given");
    std::vector<char*> cargv;
    for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
    cargv.push_back(nullptr);
    std::fflush(nullptr);  // so buffered output is not written twice
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw Error(argv[0], std::string("cannot fork: ") + std::strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        if (!output.empty()) {
            const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd < 0) _exit(126);
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execvp(cargv[0], cargv.data());
        dprintf(2, "cannot start %s: %s\n", cargv[0], std::strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw Error(argv[0], std::string("waitpid failed: ") + std::strerror(errno));
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

}  // namespace sixnd
