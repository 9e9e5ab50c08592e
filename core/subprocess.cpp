#include "core/subprocess.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "core/error.h"
#include "core/signal_cleanup.h"

namespace sixnd {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
volatile sig_atomic_t g_forwarding = 0;  // a ForwardSignals lives
volatile sig_atomic_t g_child = 0;       // the child to pass signals on to; 0 between children
volatile sig_atomic_t g_received = 0;
volatile sig_atomic_t g_pass_as = 0;     // what a signal is passed on as; 0: itself

int passed_as(int sig) { return g_pass_as != 0 ? static_cast<int>(g_pass_as) : sig; }

void forward(int sig) {
    if (g_received == 0) g_received = sig;
    if (g_child > 0) kill(static_cast<pid_t>(g_child), passed_as(sig));
}

// The signals ForwardSignals handles, held back from fork until the child's pid is known, so
// that none comes while it could be passed to nobody.
sigset_t forwarded_set() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : kSignals) sigaddset(&s, sig);
    return s;
}

}  // namespace

ForwardSignals::ForwardSignals(int pass_as) {
    static_assert(std::size(kSignals) == std::size(decltype(old_){}));
    // As a SignalBlock does: a path first armed while this lives would find this handler, not
    // the default, and never install the cleanup's, leaving every later path unwatched.
    install_signal_cleanup();
    g_received = 0;
    g_child = 0;
    g_pass_as = pass_as;
    struct sigaction sa {};
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); i++) {
        sigaction(kSignals[i], nullptr, &old_[i]);
        if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr);
    }
    g_forwarding = 1;
}

ForwardSignals::~ForwardSignals() {
    g_forwarding = 0;
    for (size_t i = 0; i < std::size(kSignals); i++) sigaction(kSignals[i], &old_[i], nullptr);
}

int ForwardSignals::received() { return g_received; }

int run_process(const std::vector<std::string>& argv, const std::string& output) {
    if (argv.empty()) throw Error("run_process", "no program given");
    std::vector<char*> cargv;
    for (const std::string& s : argv) cargv.push_back(const_cast<char*>(s.c_str()));
    cargv.push_back(nullptr);
    std::fflush(nullptr);  // so buffered output is not written twice
    const bool forwarding = g_forwarding;
    const sigset_t held = forwarded_set();
    sigset_t saved_mask;
    if (forwarding) sigprocmask(SIG_BLOCK, &held, &saved_mask);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        if (forwarding) sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
        throw Error(argv[0], std::string("cannot fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        if (forwarding) {
            // The parent's handler must not run here; an ignored signal stays ignored.
            for (int sig : kSignals) {
                struct sigaction sa {};
                sigaction(sig, nullptr, &sa);
                if (sa.sa_handler != SIG_IGN) signal(sig, SIG_DFL);
            }
            setpgid(0, 0);
            // 0 when this process's stdin was closed: /dev/null is then in place already.
            const int in = open("/dev/null", O_RDONLY);
            if (in > 0) {
                dup2(in, 0);
                close(in);
            }
            sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
        }
        if (!output.empty()) {
            const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd < 0) {
                dprintf(2, "cannot open %s for the output of %s: %s\n", output.c_str(), cargv[0], std::strerror(errno));
                _exit(126);
            }
            dup2(fd, 1);
            dup2(fd, 2);
            // A parent started with a standard descriptor closed hands the child that slot free:
            // the file lands in it, and closing it would leave the child's stdout or stderr closed
            // (its next open file would then take the child's prints).
            if (fd != 1 && fd != 2) close(fd);
        }
        execvp(cargv[0], cargv.data());
        dprintf(2, "cannot start %s: %s\n", cargv[0], std::strerror(errno));
        _exit(127);
    }
    if (forwarding) {
        setpgid(pid, pid);  // as the child does: whichever runs first, the group exists before a signal
        g_child = pid;
        // A signal that came before this child started is passed on to it too: it asked to stop.
        if (g_received != 0) kill(pid, passed_as(g_received));
        sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            g_child = 0;
            throw Error(argv[0], std::string("waitpid failed: ") + std::strerror(errno));
        }
    g_child = 0;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

}  // namespace sixnd
