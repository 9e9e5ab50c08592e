#include "train/stop_signal.h"

#include <unistd.h>

#include <cstring>

namespace sixnd {

namespace {

volatile sig_atomic_t g_signal = 0;

// Async-signal-safe only: write(2) and _exit(2).
void on_signal(int sig) {
    if (g_signal != 0) {
        const char msg[] = "\nsixnd train: second signal: exiting now, without a checkpoint\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(128 + sig);
    }
    g_signal = sig;
    const char msg[] = "\nsixnd train: stopping after this step and writing a checkpoint (signal again to exit at once)\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

}  // namespace

StopSignals::StopSignals() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::received() { return g_signal; }

}  // namespace sixnd
