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
    for (int i = 0; i < 3; i++) ::sigaction(kHeld[i], &sa, &saved_[i]);
}

SignalBlock::~SignalBlock() {
    for (int i = 0; i < 3; i++) ::sigaction(kHeld[i], &saved_[i], nullptr);
    if (const int sig = g_pending.exchange(0)) ::raise(sig);
}

}  // namespace sixnd
