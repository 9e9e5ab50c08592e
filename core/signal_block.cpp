#include "core/signal_block.h"

#include <atomic>

#include "core/signal_cleanup.h"

namespace sixnd {

namespace {

constexpr int kHeld[3] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_pending{0};

void note(int sig) {
    int none = 0;
    g_pending.compare_exchange_strong(none, sig);
}

}  // namespace

SignalBlock::SignalBlock() {
    install_signal_cleanup();
    g_pending.store(0);
    struct sigaction sa {};
    sa.sa_handler = note;
    sa.sa_flags = SA_RESTART;  // other threads' system calls carry on as if nothing came
    sigemptyset(&sa.sa_mask);
    // An ignored signal is left ignored rather than noted: noted, it would be the one raised at
    // the end, and a later signal that is not ignored would be lost.
    for (int i = 0; i < 3; i++) {
        ::sigaction(kHeld[i], nullptr, &saved_[i]);
        if (saved_[i].sa_handler != SIG_IGN || (saved_[i].sa_flags & SA_SIGINFO)) ::sigaction(kHeld[i], &sa, nullptr);
    }
}

SignalBlock::~SignalBlock() {
    for (int i = 0; i < 3; i++) ::sigaction(kHeld[i], &saved_[i], nullptr);
    if (const int sig = g_pending.exchange(0)) ::raise(sig);
}

}  // namespace sixnd
