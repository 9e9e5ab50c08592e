// Holds back SIGINT, SIGTERM and SIGHUP across a short stretch that must finish once begun: the
// renames that put a pair of files, or a new directory, in place of the old ones, where a process
// ended between two of them would leave a mismatched pair or no output at all. A signal that
// comes meanwhile is raised when the stretch ends, to whatever handled it before (the cleanup of
// core/signal_cleanup.h, a verb's own handler, the default action); an ignored one stays ignored.
//
// Not a thread's signal mask: the kernel gives a signal sent to the process to any thread that
// does not block it (an OpenMP worker), so the handlers themselves are swapped for one that only
// notes the signal. One block at a time, from one thread. SIGKILL cannot be held back: what the
// block protects must still be recoverable without it (core/dir_swap.h).
#pragma once
#include <csignal>

namespace sixnd {

class SignalBlock {
public:
    SignalBlock();
    ~SignalBlock();  // puts the handlers back, then raises the first signal that came meanwhile
    SignalBlock(const SignalBlock&) = delete;
    SignalBlock& operator=(const SignalBlock&) = delete;

private:
    struct sigaction saved_[3];
};

}  // namespace sixnd
