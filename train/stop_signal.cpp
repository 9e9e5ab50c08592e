#include "train/stop_signal.h"

#include <unistd.h>

#include "core/signal_cleanup.h"

namespace sixnd {

namespace {

volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_announce = 1;
volatile sig_atomic_t g_under_mpirun = 0;

void say(const char* msg, size_t bytes) { (void)!write(STDERR_FILENO, msg, bytes); }

// Async-signal-safe only: write(2) and _exit(2). After SIGHUP stderr may be a closed
// terminal's; a failed write there changes nothing. SIGPIPE comes again at every write to the
// closed pipe (the announcement's own, when that pipe is stderr): it asks for a stop once and is
// never the second signal.
void on_signal(int sig) {
    if (sig == SIGPIPE && g_signal != 0) return;
    if (g_signal != 0) {
        const char msg[] = "\nsixnd train: second signal: exiting now, without a checkpoint\n";
        say(msg, sizeof msg - 1);
        _exit(128 + sig);
    }
    g_signal = sig;
    if (!g_announce) return;
    const char msg[] = "\nsixnd train: stopping after this step and writing a checkpoint (signal again to exit at once)\n";
    const char mpirun_msg[] = "\nsixnd train: stopping after this step and writing a checkpoint (signal again to exit at once; "
                              "signal mpirun with SIGUSR1 for this: a SIGINT or SIGTERM it passes on is followed by a "
                              "kill a second later)\n";
    if (g_under_mpirun && (sig == SIGINT || sig == SIGTERM))
        say(mpirun_msg, sizeof mpirun_msg - 1);
    else
        say(msg, sizeof msg - 1);
}

}  // namespace

StopSignals::StopSignals(bool announce, bool under_mpirun) {
    // As a SignalBlock does: a temporary file first armed while these handlers are in place would
    // find them, not the default, and never install the cleanup's, leaving later files unwatched.
    install_signal_cleanup();
    g_signal = 0;
    g_announce = announce;
    g_under_mpirun = under_mpirun;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kSignals); i++) {
        sigaction(kSignals[i], nullptr, &old_[i]);
        if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr);
    }
}

StopSignals::~StopSignals() {
    for (size_t i = 0; i < std::size(kSignals); i++) {
        // The closed pipe stays closed: the stop's own message would otherwise end the process
        // before it exits with the interrupted run's status.
        if (kSignals[i] == SIGPIPE && g_signal == SIGPIPE) {
            signal(SIGPIPE, SIG_IGN);
            continue;
        }
        sigaction(kSignals[i], &old_[i], nullptr);
    }
}

int StopSignals::received() { return g_signal; }

const char* StopSignals::name(int sig) {
    switch (sig) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        case SIGUSR1: return "SIGUSR1";
        case SIGPIPE: return "SIGPIPE";
        default: return "a signal";
    }
}

}  // namespace sixnd
