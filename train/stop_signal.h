// SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) during training: the first asks
// the run to stop after the step in flight (the trainer then writes a checkpoint, says how to
// resume, and exits non-zero); a second one ends the process at once. A signal ignored when the
// run starts (`nohup sixnd train`) stays ignored. The handlers are installed for the lifetime
// of a StopSignals and the previous ones restored after it. Under mpirun a scheduler's cancel
// signals every rank: only rank 0 announces the stop, so the job says it once.
#pragma once
#include <csignal>
#include <iterator>

namespace sixnd {

class StopSignals {
public:
    // announce: say on stderr, at the first signal, that the run is stopping.
    explicit StopSignals(bool announce);
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    // The signal that asked for a stop, or 0.
    static int received();
    // "SIGINT", "SIGTERM" or "SIGHUP": the name a user knows the stopping signal by.
    static const char* name(int sig);

private:
    static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction old_[std::size(kSignals)] {};
};

}  // namespace sixnd
