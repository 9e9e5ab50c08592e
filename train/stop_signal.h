// SIGINT, SIGTERM, SIGHUP (a closed terminal or ssh session), SIGUSR1 and SIGPIPE (the pipe the
// output goes to was closed: `sixnd train | head`, a pager quit) during training: the first asks
// the run to stop after the step in flight (the trainer then writes a checkpoint, says how to
// resume, and exits non-zero; during set-up, before the first step: no checkpoint, as nothing was
// trained); a second one ends the process at once. A signal ignored when the
// run starts (`nohup sixnd train`) stays ignored. The handlers are installed for the lifetime of
// a StopSignals and the previous ones restored after it (SIGPIPE's, once it stopped the run, is
// left ignored). Under mpirun a scheduler's cancel signals every rank: only rank 0 announces the
// stop, so the job says it once. SIGUSR1 is the one a signal sent to mpirun can stop with: Open
// MPI's mpirun passes SIGINT and SIGTERM on as SIGTERM and kills the ranks a second later, before
// a step of any size ends, but passes SIGUSR1 on to every rank as it is (a scheduler's
// pre-emption warning is often SIGUSR1 too).
#pragma once
#include <csignal>
#include <iterator>

namespace sixnd {

class StopSignals {
public:
    // announce: say on stderr, at the first signal, that the run is stopping; under_mpirun: and,
    // for SIGINT or SIGTERM, that mpirun would have killed the ranks had it been sent the signal
    // (the rank cannot tell), naming SIGUSR1 as the one to send it.
    StopSignals(bool announce, bool under_mpirun);
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    // The signal that asked for a stop, or 0.
    static int received();
    // "SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1" or "SIGPIPE": the name a user knows the stopping signal by.
    static const char* name(int sig);

private:
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE};
    struct sigaction old_[std::size(kSignals)] {};
};

}  // namespace sixnd
